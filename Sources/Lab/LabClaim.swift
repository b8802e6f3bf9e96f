import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A lab's claim on the namespaces it creates: a file in `LabClaim.defaultDirectory` naming them, written
/// before they exist and locked (`flock`) by the lab process for as long as it lives.
///
/// The kernel releases the lock however the process ends (SIGKILL included) and never while it lives, so
/// a claim whose lock can be taken was left by a lab that died: pid reuse cannot fool it, and a running
/// lab's namespaces are never taken. The descriptor is close-on-exec, so the lab's children (the server,
/// the engine), which outlive a killed lab, do not hold the lock. `sweep` removes what dead labs left.
public final class LabClaim: Sendable {
    /// Where labs record their claims: `METERWISE_LAB_DIR`, else `/run/meterwise-lab`.
    public static var defaultDirectory: String {
        ProcessInfo.processInfo.environment["METERWISE_LAB_DIR"].flatMap { $0.isEmpty ? nil : $0 }
            ?? "/run/meterwise-lab"
    }

    /// The claim file.
    public let path: String
    public let record: LabClaimRecord
    private let fd: Int32

    private init(path: String, record: LabClaimRecord, fd: Int32) {
        self.path = path
        self.record = record
        self.fd = fd
    }

    /// Records `namespaces` (not created yet) as this process's, locked until `release()` or its death.
    public static func acquire(namespaces: [String], directory: String = defaultDirectory) throws(LabError) -> LabClaim
    {
        let record = LabClaimRecord(pid: getpid(), namespaces: namespaces)
        guard record.isValid else {
            throw LabError(
                .commandFailed, "cannot claim namespaces \(namespaces): names must be letters, digits, . _ -")
        }
        try prepare(directory)
        let base = "\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let temporary = "\(directory)/.\(base).tmp"
        let path = "\(directory)/\(base).claim"
        // Locked before it has a name a sweep reads, so no sweep can see it unlocked while this lab lives.
        let fd = open(temporary, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw failure("cannot create \(temporary)") }
        let text = Array(record.text.utf8)
        guard flock(fd, LOCK_EX | LOCK_NB) == 0,
            text.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == text.count, fsync(fd) == 0,
            rename(temporary, path) == 0
        else {
            let error = failure("cannot write the lab's claim \(path)")
            unlink(temporary)
            close(fd)
            throw error
        }
        return LabClaim(path: path, record: record, fd: fd)
    }

    /// Removes the claim (after the lab removed its namespaces) and drops the lock.
    public func release() {
        unlink(path)
        close(fd)
    }

    /// One namespace a dead lab left behind, now removed.
    public struct Removed: Sendable, Hashable {
        public var namespace: String
        /// The dead lab's process id.
        public var pid: Int32
        /// The processes that were still inside (killed).
        public var killed: [Int32]

        public init(namespace: String, pid: Int32, killed: [Int32]) {
            self.namespace = namespace
            self.pid = pid
            self.killed = killed
        }

        /// The line the lab prints for it.
        public var message: String {
            "removed namespace \(namespace) left by a lab that died (pid \(pid))"
                + (killed.isEmpty
                    ? ""
                    : "; killed \(killed.count) process(es) still in it: "
                        + killed.map(String.init).joined(separator: " "))
        }
    }

    /// Whether no live process holds the lock of the claim at `path` (its lab is dead, or never was).
    public static func isFree(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return true }
        defer { close(fd) }
        return flock(fd, LOCK_EX | LOCK_NB) == 0
    }

    /// Removes the namespaces (and the processes inside them) of every claim in `directory` whose lab is
    /// dead, and those claims. Claims of running labs are left alone. Never throws: a namespace that
    /// cannot be removed stays, its claim too, for the next sweep.
    public static func sweep(directory: String = defaultDirectory) -> [Removed] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        var removed: [Removed] = []
        for entry in entries.sorted() where entry.hasSuffix(".claim") || entry.hasSuffix(".tmp") {
            let path = "\(directory)/\(entry)"
            // A claim being written is locked a moment after it is created: only an old one is a dead lab's.
            if entry.hasSuffix(".tmp"), !isOlder(path, than: 60) { continue }
            let fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            // Locked: its lab is alive. The lock is held until close, so no other sweep works on it meanwhile.
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { continue }
            var stats = stat()
            guard fstat(fd, &stats) == 0, stats.st_uid == geteuid(), stats.st_size < 64 << 10 else { continue }
            let record = LabClaimRecord(parsing: readAll(fd)) ?? LabClaimRecord(pid: 0, namespaces: [])
            var complete = true
            for namespace in record.namespaces {
                guard access("/run/netns/\(namespace)", F_OK) == 0 else { continue }
                let killed = killProcesses(in: namespace)
                _ = try? Command.run(["ip", "netns", "del", namespace], allowFailure: true)
                if access("/run/netns/\(namespace)", F_OK) == 0 {
                    complete = false
                } else {
                    removed.append(Removed(namespace: namespace, pid: record.pid, killed: killed))
                }
            }
            if complete { unlink(path) }
        }
        return removed
    }

    /// SIGKILLs every process in `namespace` and waits (up to 2 s) until they are gone; their pids.
    static func killProcesses(in namespace: String) -> [Int32] {
        func pids() -> [Int32] {
            let text = (try? Command.run(["ip", "netns", "pids", namespace], allowFailure: true)) ?? ""
            return text.split(whereSeparator: \.isWhitespace).compactMap { Int32($0) }.filter {
                $0 > 1 && $0 != getpid()
            }
        }
        let found = pids()
        for pid in found { kill(pid, SIGKILL) }
        for _ in 0..<200 where !pids().isEmpty { usleep(10_000) }
        return found
    }

    static func isOlder(_ path: String, than seconds: Int) -> Bool {
        var stats = stat()
        return lstat(path, &stats) == 0 && time(nil) - stats.st_mtim.tv_sec > seconds
    }

    static func prepare(_ directory: String) throws(LabError) {
        if mkdir(directory, 0o700) != 0 && errno != EEXIST { throw failure("cannot create \(directory)") }
        var stats = stat()
        guard lstat(directory, &stats) == 0, stats.st_mode & 0o170000 == 0o040000, stats.st_uid == geteuid(),
            stats.st_mode & 0o022 == 0
        else {
            throw LabError(
                .commandFailed,
                "\(directory) must be a directory of this user that others cannot write; "
                    + "remove it and run the lab again")
        }
    }

    static func readAll(_ fd: Int32) -> String {
        var data = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        var offset: off_t = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, offset) }
            guard count > 0 else { break }
            data += buffer[0..<count]
            offset += off_t(count)
        }
        return String(decoding: data, as: UTF8.self)
    }

    static func failure(_ what: String) -> LabError {
        LabError(.commandFailed, "\(what): \(String(cString: strerror(errno))) (the lab needs root)")
    }
}
