import Foundation
import MeterwiseClient
import Policy

#if canImport(Glibc)
import Glibc
#endif

/// What `keep_free` needs from the file system: a job's directory's free space and size (`statvfs`) and its
/// device, so that jobs on one file system count against each other. One `statvfs` and one `stat` per
/// job checked; only when the policy sets `keep_free`.
enum SpaceCheck {
    /// The file system of `path`'s directory: free bytes, size, device; nil when it cannot be read (then the
    /// job is not held: the transfer's own check says what is wrong).
    static func filesystem(of destination: String) -> (directory: String, free: Int64, size: Int64, device: UInt64)? {
        let directory: String
        if let slash = destination.lastIndex(of: "/") {
            directory = slash == destination.startIndex ? "/" : String(destination[..<slash])
        } else {
            directory = "."
        }
        var info = statvfs()
        var status = stat()
        guard statvfs(directory, &info) == 0, stat(directory, &status) == 0 else { return nil }
        let unit = Int64(clamping: info.f_frsize == 0 ? info.f_bsize : info.f_frsize)
        let free = Int64(clamping: info.f_bavail).multipliedReportingOverflow(by: unit)
        let size = Int64(clamping: info.f_blocks).multipliedReportingOverflow(by: unit)
        return (
            directory, free.overflow ? .max : free.partialValue, size.overflow ? .max : size.partialValue,
            UInt64(status.st_dev)
        )
    }

    /// Bytes a record's job still has to write; 0 when its size is unknown.
    static func remaining(_ record: JobRecord) -> Int64 {
        guard let total = record.totalBytes ?? record.size, total > 0 else { return 0 }
        return max(0, total - max(0, record.bytesDone))
    }
}

extension Engine {
    /// Why the job `id` may not write now under `keep_free`, or nil when it may (or the policy sets none).
    /// Other running jobs on the same file system have their remaining bytes promised to them.
    func spaceProblem(_ id: String) -> String? {
        guard let keepFree = policy.defaults.keepFree, let record = jobs[id]?.record,
            let here = SpaceCheck.filesystem(of: record.destination)
        else { return nil }
        var reserved: Int64 = 0
        for (other, runtime) in jobs where other != id && isTransferring(other) {
            guard let there = SpaceCheck.filesystem(of: runtime.record.destination), there.device == here.device
            else { continue }
            reserved = reserved.addingReportingOverflow(SpaceCheck.remaining(runtime.record)).partialValue
        }
        let facts = SpaceFacts(
            path: here.directory, free: here.free, size: here.size, needed: SpaceCheck.remaining(record),
            reserved: reserved)
        return SpaceGate.problem(facts, keepFree: keepFree)
    }
}
