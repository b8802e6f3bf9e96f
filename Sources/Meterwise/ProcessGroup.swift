import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A command's processes and the sockets they hold, as /proc shows them (the user's own processes need no
/// privilege).
enum ProcessGroup {
    /// The processes whose process group is `group` (the leader included): a scan of every /proc/PID/stat.
    static func members(of group: pid_t) -> [pid_t] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap { entry -> pid_t? in
            guard let pid = pid_t(entry), pid > 0,
                let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                processGroup(fromStat: stat) == group
            else { return nil }
            return pid
        }
    }

    /// Field 5 of `/proc/PID/stat`, counted after the command name's closing parenthesis (the name may
    /// hold spaces and parentheses itself).
    static func processGroup(fromStat stat: String) -> pid_t? {
        guard let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After ")": state, ppid, pgrp.
        guard fields.count >= 3 else { return nil }
        return pid_t(fields[2])
    }

    /// `pid` and its descendants, from each thread's `/proc/PID/task/TID/children` (cheap: a few small files,
    /// no scan of /proc). At most `limit` processes.
    static func descendants(of pid: pid_t, limit: Int = 4096) -> [pid_t] {
        var found: [pid_t] = []
        var next = [pid]
        var seen = Set<pid_t>()
        while let current = next.popLast(), found.count < limit {
            guard seen.insert(current).inserted else { continue }
            found.append(current)
            guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(current)/task") else {
                continue
            }
            for task in tasks {
                guard let text = try? String(contentsOfFile: "/proc/\(current)/task/\(task)/children", encoding: .utf8)
                else { continue }
                next += text.split(separator: " ").compactMap {
                    pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines))
                }
            }
        }
        return found
    }

    /// The inodes of the sockets `pid` holds (`/proc/PID/fd/N -> socket:[INODE]`).
    static func socketInodes(of pid: pid_t) -> [UInt64] {
        guard let directory = opendir("/proc/\(pid)/fd") else { return [] }
        defer { closedir(directory) }
        var inodes: [UInt64] = []
        var target = [CChar](repeating: 0, count: 64)
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name.first?.isNumber == true else { continue }
            let length = readlink("/proc/\(pid)/fd/\(name)", &target, target.count - 1)
            guard length > 0 else { continue }
            if let inode = socketInode(
                fromLink: String(decoding: target[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self))
            {
                inodes.append(inode)
            }
        }
        return inodes
    }

    /// `socket:[12345]` -> 12345.
    static func socketInode(fromLink link: String) -> UInt64? {
        guard link.hasPrefix("socket:["), link.hasSuffix("]") else { return nil }
        return UInt64(link.dropFirst("socket:[".count).dropLast())
    }
}
