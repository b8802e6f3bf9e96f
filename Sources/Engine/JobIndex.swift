import MeterwiseClient
import Policy

/// What the policy needs of a job besides its size. Jobs alike share one class, so a pass decides each
/// class (and size) once, and a queued job costs the index a number, not a copy of its tags.
struct JobClass: Hashable, Sendable {
    var priority: Int
    var tags: [String]
    var allowMetered: Bool
    var allowRoaming: Bool?
    /// Per-user budgets count against the owner's share.
    var owner: UInt32?

    init(_ record: JobRecord) {
        priority = record.priority
        tags = record.tags
        allowMetered = record.allowMetered
        allowRoaming = record.allowRoaming
        owner = record.ownerUID
    }

    /// The job as the policy sees it (no id: the decision does not depend on which job it is).
    func info(size: Int64?) -> JobInfo {
        JobInfo(
            size: size, priority: priority, tags: tags, allowMetered: allowMetered, allowRoaming: allowRoaming,
            owner: owner)
    }
}

/// The parts of a decision that say what a job does (the policy's one definition of "the same decision").
typealias DecisionKey = Decision.Outcome

/// One job that is not finished, as the index keeps it: 56 bytes, no heap of its own (an id of up to 15
/// bytes is stored inline by `String`).
struct JobEntry: Sendable {
    struct Flags: OptionSet, Sendable {
        let rawValue: UInt8
        /// The engine holds the job's record and transfer (`Engine.jobs`); the record's size and class are
        /// then the runtime's. The lifecycle is always the entry's.
        static let live = Flags(rawValue: 1)
        /// `ownerUID` is set (jobs stored before owners were recorded have none: the daemon's own).
        static let owned = Flags(rawValue: 2)
    }

    var id: String
    /// The size the policy judges: the server's once known, else the declared one; -1 when neither.
    var size: Int64
    var jobClass: Int32
    /// The last decision's number in `JobIndex.decisions`; -1 before the first.
    var decision: Int32
    var ownerUID: UInt32
    var priority: Int32
    /// The job's state: the one place it is kept, live or not.
    var lifecycle: JobLifecycle
    var flags: Flags
    /// The job's place in the order jobs were added (the store's rowid): among equal priorities, older first.
    var sequence: Int64

    var policySize: Int64? { size < 0 ? nil : size }
    var owner: UInt32? { flags.contains(.owned) ? ownerUID : nil }
    var isLive: Bool { flags.contains(.live) }
    var state: JobState { lifecycle.phase.jobState }
}

/// Every job that is not finished, in the few bytes a pass needs: the id, priority, state, owner, a class
/// number for what the policy judges and the last decision's number. Records themselves stay in the store
/// until a job starts or someone asks about it, so memory grows by about 70 bytes per queued job.
///
/// `schedule` holds the entries in the order a pass decides them: priority first, then the order they
/// were added; kept sorted as jobs come and go, so no pass sorts.
struct JobIndex: Sendable {
    private(set) var entries: [JobEntry] = []
    private var unusedEntries: [Int32] = []
    private var slots: [String: Int32] = [:]
    private(set) var schedule: [Int32] = []
    private(set) var classes = InternTable<JobClass>()
    private(set) var decisions = InternTable<DecisionKey>()

    /// Jobs here that are queued or waiting.
    private(set) var waitingCount = 0

    /// Unfinished jobs per owner (jobs without a recorded owner are the daemon's, and not counted).
    private var unfinishedByOwner: [UInt32: Int] = [:]

    var count: Int { slots.count }

    /// How many unfinished jobs `uid` owns (for `JobQuota`).
    func unfinished(of uid: UInt32) -> Int { unfinishedByOwner[uid] ?? 0 }
    var isEmpty: Bool { slots.isEmpty }

    func slot(of id: String) -> Int32? { slots[id] }

    subscript(slot: Int32) -> JobEntry { entries[Int(slot)] }

    func entry(_ id: String) -> JobEntry? { slots[id].map { entries[Int($0)] } }

    /// The last decision of the entry, if it had one.
    func decision(of entry: JobEntry) -> DecisionKey? { entry.decision < 0 ? nil : decisions[entry.decision] }

    /// What the index takes of a record.
    struct Row: Sendable {
        var id: String
        var jobClass: JobClass
        var size: Int64?
        var ownerUID: UInt32?
        var state: JobState
        var sequence: Int64

        init(_ record: JobRecord, sequence: Int64) {
            self.sequence = sequence
            id = record.id
            jobClass = JobClass(record)
            size = record.policySize
            ownerUID = record.ownerUID
            state = record.state
        }
    }

    /// Adds a job in its place: after every job of a higher priority, and of the same priority added before it.
    @discardableResult
    mutating func insert(_ row: Row) -> Int32 {
        let slot = store(row)
        let entry = entries[Int(slot)]
        var low = 0
        var high = schedule.count
        while low < high {
            let mid = (low + high) / 2
            if Self.before(entries[Int(schedule[mid])], entry) { low = mid + 1 } else { high = mid }
        }
        schedule.insert(slot, at: low)
        return slot
    }

    /// Adds jobs, sorting the schedule once (a daemon's start with a long queue).
    mutating func load(_ rows: some Sequence<Row>) {
        for row in rows { schedule.append(store(row)) }
        let entries = self.entries
        schedule.sort { Self.before(entries[Int($0)], entries[Int($1)]) }
    }

    /// The order of a pass: priority first, then the order jobs were added.
    static func before(_ a: JobEntry, _ b: JobEntry) -> Bool {
        a.priority != b.priority ? a.priority > b.priority : a.sequence < b.sequence
    }

    private mutating func store(_ row: Row) -> Int32 {
        remove(row.id)  // a job indexed again (resumed) starts afresh
        var flags: JobEntry.Flags = []
        if row.ownerUID != nil { flags.insert(.owned) }
        let entry = JobEntry(
            id: row.id, size: row.size ?? -1, jobClass: classes.acquire(row.jobClass), decision: -1,
            ownerUID: row.ownerUID ?? 0, priority: Int32(clamping: row.jobClass.priority),
            lifecycle: JobLifecycle(JobPhase(stored: row.state)), flags: flags,
            sequence: row.sequence)
        let slot: Int32
        if let reused = unusedEntries.popLast() {
            slot = reused
            entries[Int(slot)] = entry
        } else {
            slot = Int32(entries.count)
            entries.append(entry)
        }
        slots[row.id] = slot
        waitingCount += Self.waits(entry)
        if let owner = entry.owner { unfinishedByOwner[owner, default: 0] += 1 }
        return slot
    }

    /// Drops a job (finished, or gone from the store).
    mutating func remove(_ id: String) {
        guard let slot = slots.removeValue(forKey: id) else { return }
        let entry = entries[Int(slot)]
        waitingCount -= Self.waits(entry)
        if let owner = entry.owner {
            let left = (unfinishedByOwner[owner] ?? 1) - 1
            unfinishedByOwner[owner] = left > 0 ? left : nil
        }
        classes.release(entry.jobClass)
        if entry.decision >= 0 { decisions.release(entry.decision) }
        if let position = schedule.firstIndex(of: slot) { schedule.remove(at: position) }
        entries[Int(slot)] = JobEntry(
            id: "", size: -1, jobClass: -1, decision: -1, ownerUID: 0, priority: 0,
            lifecycle: JobLifecycle(.cancelled), flags: [], sequence: 0)
        unusedEntries.append(slot)
    }

    /// Changes an entry's lifecycle, flags or size (not its class or decision: `setDecision`).
    mutating func modify<T, E: Error>(_ slot: Int32, _ body: (inout JobEntry) throws(E) -> T) throws(E) -> T {
        waitingCount -= Self.waits(entries[Int(slot)])
        defer { waitingCount += Self.waits(entries[Int(slot)]) }
        return try body(&entries[Int(slot)])
    }

    private static func waits(_ entry: JobEntry) -> Int {
        entry.state == .queued || entry.state == .waiting ? 1 : 0
    }

    /// How many of the jobs are in each state.
    func stateCounts() -> [JobState: Int] {
        var counts: [JobState: Int] = [:]
        for entry in entries where !entry.id.isEmpty { counts[entry.state, default: 0] += 1 }
        return counts
    }

    /// Keeps a decision's number in use while no entry may hold it (a pass sharing it between jobs, one of
    /// which may leave the index meanwhile).
    mutating func holdDecision(_ number: Int32) { decisions.retain(number) }

    mutating func releaseDecision(_ number: Int32) { decisions.release(number) }

    /// Records the entry's decision by the number of one in use; false when it is the one it had.
    mutating func setDecision(_ slot: Int32, number: Int32) -> Bool {
        let old = entries[Int(slot)].decision
        guard old != number else { return false }
        decisions.retain(number)
        if old >= 0 { decisions.release(old) }
        entries[Int(slot)].decision = number
        return true
    }

    /// Records the entry's decision; false when it is the one it had.
    mutating func setDecision(_ slot: Int32, _ key: DecisionKey) -> Bool {
        let old = entries[Int(slot)].decision
        if old >= 0, decisions[old] == key { return false }
        let new = decisions.acquire(key)
        if old >= 0 { decisions.release(old) }
        entries[Int(slot)].decision = new
        return true
    }
}
