import Foundation
import GRDB
import MeterwiseClient
import Policy

/// The persistent queue: jobs, their progress and state, budget usage and per-link byte totals, in
/// SQLite (WAL, synchronous=FULL) so a SIGKILL or a power cut loses nothing that was acknowledged.
public final class JobStore: Sendable {
    let database: DatabasePool
    public let path: String

    /// Opens (creating if needed) the store at `path` and migrates its schema.
    public init(path: String) throws(EngineError) {
        self.path = path
        do {
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Self.makePrivate(path)
            var configuration = Configuration()
            configuration.prepareDatabase { db in
                try db.execute(sql: "PRAGMA synchronous = FULL")
                // SQLite's page cache is per connection (2 MiB each by default); the daemon's reads are a
                // job at a time or a list, so 512 KiB each is plenty and keeps a big queue's memory down.
                try db.execute(sql: "PRAGMA cache_size = -512")
            }
            configuration.maximumReaderCount = 2
            configuration.busyMode = .timeout(5)
            database = try DatabasePool(path: path, configuration: configuration)
            try Self.migrator.migrate(database)
        } catch {
            throw EngineError(
                .store, "cannot open the job store at \(path): check that the state directory is writable",
                cause: error)
        }
    }

    /// The store holds job URLs (presigned signatures, credentials): it is created 0600 before SQLite opens
    /// it (SQLite gives its WAL and shared-memory files the same mode), and tightened if it was wider.
    static func makePrivate(_ path: String) throws {
        let fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw EngineError(.store, "cannot create \(path) (\(String(cString: strerror(errno))))")
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_uid == geteuid() else {
            throw EngineError(.store, "\(path) is not a regular file of this user: remove it or choose another --state")
        }
        if st.st_mode & 0o077 != 0 { _ = fchmod(fd, 0o600) }
        for companion in [path + "-wal", path + "-shm"] { _ = chmod(companion, 0o600) }
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.create(table: "job") { t in
                t.primaryKey("id", .text)
                t.column("url", .text).notNull()
                t.column("headURL", .text)
                t.column("destination", .text).notNull()
                t.column("expectedSHA256", .text)
                t.column("size", .integer)
                t.column("priority", .integer).notNull().defaults(to: 0)
                t.column("tags", .jsonText).notNull()
                t.column("allowMetered", .boolean).notNull()
                t.column("allowRoaming", .boolean)
                t.column("segments", .integer)
                t.column("state", .text).notNull().indexed()
                t.column("bytesDone", .integer).notNull()
                t.column("totalBytes", .integer)
                t.column("bytesFetched", .integer).notNull()
                t.column("refetchedBytes", .integer).notNull()
                t.column("sha256", .text)
                t.column("rule", .text)
                t.column("reason", .text)
                t.column("error", .text)
                t.column("checkpointPath", .text).notNull()
                t.column("createdAt", .datetime).notNull()
                t.column("updatedAt", .datetime).notNull()
            }
            try db.create(table: "usage") { t in
                t.primaryKey("budgetKey", .text)
                t.column("bytes", .integer).notNull()
            }
            try db.create(table: "linkBytes") { t in
                t.primaryKey("link", .text)
                t.column("kind", .text).notNull()
                t.column("bytes", .integer).notNull()
            }
        }
        migrator.registerMigration("v2-snake-case") { db in
            // One JSON and column convention: the job table's camelCase columns become snake_case.
            let renames = [
                ("headURL", "head_url"), ("expectedSHA256", "expected_sha256"), ("allowMetered", "allow_metered"),
                ("allowRoaming", "allow_roaming"), ("bytesDone", "bytes_done"), ("totalBytes", "total_bytes"),
                ("bytesFetched", "bytes_fetched"), ("refetchedBytes", "refetched_bytes"),
                ("checkpointPath", "checkpoint_path"), ("createdAt", "created_at"), ("updatedAt", "updated_at"),
            ]
            for (old, new) in renames {
                try db.execute(sql: "ALTER TABLE job RENAME COLUMN \(old) TO \(new)")
            }
            try db.execute(sql: "ALTER TABLE usage RENAME COLUMN budgetKey TO budget_key")
            try db.execute(sql: "ALTER TABLE linkBytes RENAME TO link_bytes")
        }
        migrator.registerMigration("v3-owner") { db in
            // Who added each job (the control socket's peer); older jobs are the daemon's own.
            try db.execute(sql: "ALTER TABLE job ADD COLUMN owner_uid INTEGER")
            try db.execute(sql: "ALTER TABLE job ADD COLUMN owner_gid INTEGER")
        }
        migrator.registerMigration("v4-limits") { db in
            try db.execute(sql: "ALTER TABLE job ADD COLUMN max_size INTEGER")
            try db.execute(sql: "ALTER TABLE job ADD COLUMN interruptions INTEGER NOT NULL DEFAULT 0")
        }
        migrator.registerMigration("v5-tls-proxy") { db in
            for column in ["ca_file", "cert_file", "key_file", "proxy"] {
                try db.execute(sql: "ALTER TABLE job ADD COLUMN \(column) TEXT")
            }
        }
        migrator.registerMigration("v6-paged-jobs") { db in
            // The engine holds no queued job's record: `add` asks the store whether an unfinished job has the
            // destination, and a finished job's paused time is read from here (not part of `JobRecord`:
            // the status shows it beside the record).
            try db.execute(sql: "CREATE INDEX IF NOT EXISTS job_destination ON job(destination)")
            try db.execute(sql: "ALTER TABLE job ADD COLUMN paused_seconds REAL NOT NULL DEFAULT 0")
        }
        migrator.registerMigration("v7-discarded") { db in
            try db.execute(sql: "ALTER TABLE job ADD COLUMN discarded_bytes INTEGER NOT NULL DEFAULT 0")
        }
        migrator.registerMigration("v8-mode") { db in
            try db.execute(sql: "ALTER TABLE job ADD COLUMN mode TEXT")
        }
        migrator.registerMigration("v9-delta") { db in
            try db.execute(sql: "ALTER TABLE job ADD COLUMN zsync TEXT")
            try db.execute(sql: "ALTER TABLE job ADD COLUMN seeds TEXT")
            try db.execute(sql: "ALTER TABLE job ADD COLUMN delta_bytes INTEGER")
        }
        migrator.registerMigration("v10-mirrors") { db in
            try db.execute(sql: "ALTER TABLE job ADD COLUMN mirrors TEXT")
            try db.execute(sql: "ALTER TABLE job ADD COLUMN metalink TEXT")
            try db.execute(sql: "ALTER TABLE job ADD COLUMN sources TEXT")
        }
        migrator.registerMigration("v11-http2") { db in
            try db.execute(sql: "ALTER TABLE job ADD COLUMN http2 INTEGER")
        }
        return migrator
    }

    func write<T: Sendable>(_ what: String, _ body: @Sendable (Database) throws -> T) throws(EngineError) -> T {
        do {
            return try database.write(body)
        } catch {
            throw EngineError(.store, "cannot \(what) in the job store at \(path)", cause: error)
        }
    }

    func read<T: Sendable>(_ what: String, _ body: @Sendable (Database) throws -> T) throws(EngineError) -> T {
        do {
            return try database.read(body)
        } catch {
            throw EngineError(.store, "cannot \(what) in the job store at \(path)", cause: error)
        }
    }

    /// Adds a job; fails when one with the same id exists.
    /// Returns the job's place in the order jobs were added (its rowid).
    @discardableResult
    public func insert(_ job: JobRecord) throws(EngineError) -> Int64 {
        try write("add a job") { db in
            try job.insert(db)
            return db.lastInsertedRowID
        }
    }

    /// A job's place in the order jobs were added (its rowid), if it is stored.
    public func sequence(of id: String) throws(EngineError) -> Int64? {
        try read("read a job") { db in
            try Int64.fetchOne(db, sql: "SELECT rowid FROM job WHERE id = ?", arguments: [id])
        }
    }

    /// Saves every field of a job, and the time it has spent paused by the policy when given.
    public func update(_ job: JobRecord, pausedSeconds: Double? = nil) throws(EngineError) {
        var job = job
        job.updatedAt = Date()
        let saved = job
        try write("save a job") { db in
            try saved.update(db)
            if let pausedSeconds, pausedSeconds.isFinite {
                try db.execute(
                    sql: "UPDATE job SET paused_seconds = ? WHERE id = ?", arguments: [pausedSeconds, saved.id])
            }
        }
    }

    /// The time each of `ids` (every job when nil) spent paused by the policy, as last saved; jobs with
    /// none are left out.
    public func pausedSeconds(_ ids: [String]? = nil) throws(EngineError) -> [String: Double] {
        try read("read paused times") { db in
            var result: [String: Double] = [:]
            let rows: [Row]
            if let ids {
                rows = try Row.fetchAll(
                    db,
                    sql:
                        "SELECT id, paused_seconds FROM job WHERE paused_seconds > 0 AND id IN (\(ids.map { _ in "?" }.joined(separator: ",")))",
                    arguments: StatementArguments(ids))
            } else {
                rows = try Row.fetchAll(db, sql: "SELECT id, paused_seconds FROM job WHERE paused_seconds > 0")
            }
            for row in rows { result[row["id"]] = row["paused_seconds"] }
            return result
        }
    }

    public func job(_ id: String) throws(EngineError) -> JobRecord? {
        try read("read a job") { db in try JobRecord.fetchOne(db, key: id) }
    }

    /// Every job, in the order they were added.
    public func jobs() throws(EngineError) -> [JobRecord] {
        try read("list jobs") { db in try JobRecord.order(Column.rowID).fetchAll(db) }
    }

    /// The jobs in `state`, in the order they were added.
    public func jobs(in state: JobState) throws(EngineError) -> [JobRecord] {
        try read("list jobs") { db in
            try JobRecord.filter(Column("state") == state.rawValue).order(Column.rowID).fetchAll(db)
        }
    }

    /// Every job that is not finished, in the order they were added, each turned into what the caller keeps
    /// of it as it is read (so a long queue is never held as records).
    func unfinishedJobs<T: Sendable>(_ transform: @escaping @Sendable (JobRecord, _ sequence: Int64) -> T)
        throws(EngineError) -> [T]
    {
        try read("list jobs") { db in
            let request = JobRecord.select(AllColumns(), Column.rowID.forKey("meterwise_sequence"))
                .filter(!Self.finalStates.contains(Column("state"))).order(Column.rowID)
            let rows = try Row.fetchCursor(db, request)
            var result: [T] = []
            while let row = try rows.next() {
                result.append(transform(try JobRecord(row: row), row["meterwise_sequence"]))
            }
            return result
        }
    }

    /// The unfinished job that downloads to `destination`, if any: its id and owner.
    public func unfinishedJob(at destination: String) throws(EngineError) -> (id: String, ownerUID: UInt32?)? {
        try read("look up a destination") { db in
            let row = try Row.fetchOne(
                db, sql: "SELECT id, owner_uid FROM job WHERE destination = ? AND state NOT IN (?, ?, ?) LIMIT 1",
                arguments: [destination] + StatementArguments(Self.finalStates))
            return row.map { (id: $0["id"], ownerUID: $0["owner_uid"]) }
        }
    }

    /// How many jobs are in each state.
    public func countsByState() throws(EngineError) -> [JobState: Int] {
        try read("count jobs") { db in
            var counts: [JobState: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT state, COUNT(*) AS n FROM job GROUP BY state") {
                if let state = JobState(rawValue: row["state"]) { counts[state] = row["n"] }
            }
            return counts
        }
    }

    static let finalStates = [JobState.completed, .failed, .cancelled].map(\.rawValue)

    /// Deletes the finished (completed, failed, cancelled) jobs last changed before `cutoff`; returns
    /// their ids.
    @discardableResult
    public func pruneFinished(before cutoff: Date) throws(EngineError) -> [String] {
        try write("prune finished jobs") { db in
            let old = JobRecord.filter(Self.finalStates.contains(Column("state")) && Column("updated_at") < cutoff)
            let ids = try String.fetchAll(db, old.select(Column("id")))
            try old.deleteAll(db)
            return ids
        }
    }

    public func count() throws(EngineError) -> Int {
        try read("count jobs") { db in try JobRecord.fetchCount(db) }
    }

    /// The budget ledger.
    public func usage() throws(EngineError) -> Usage {
        try read("read budget usage") { db in
            var bytes: [String: Int64] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT budget_key, bytes FROM usage") {
                bytes[row["budget_key"]] = row["bytes"]
            }
            return Usage(bytes: bytes)
        }
    }

    /// Saves the budget ledger and per-link totals in one transaction.
    public func saveAccounting(usage: Usage, linkBytes: [String: (kind: String, bytes: Int64)]) throws(EngineError) {
        let rows = linkBytes.map { ($0.key, $0.value.kind, $0.value.bytes) }
        let ledger = usage.bytes
        try write("save budget usage") { db in
            try db.execute(sql: "DELETE FROM usage")
            for (key, bytes) in ledger {
                try db.execute(sql: "INSERT INTO usage (budget_key, bytes) VALUES (?, ?)", arguments: [key, bytes])
            }
            for (link, kind, bytes) in rows {
                try db.execute(
                    sql: "INSERT OR REPLACE INTO link_bytes (link, kind, bytes) VALUES (?, ?, ?)",
                    arguments: [link, kind, bytes])
            }
        }
    }

    /// Bytes received per link since the store was created.
    public func linkBytes() throws(EngineError) -> [String: (kind: String, bytes: Int64)] {
        try read("read link totals") { db in
            var result: [String: (kind: String, bytes: Int64)] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT link, kind, bytes FROM link_bytes") {
                result[row["link"]] = (row["kind"], row["bytes"])
            }
            return result
        }
    }
}
