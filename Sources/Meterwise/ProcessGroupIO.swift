import Foundation

/// The bytes a process group has read, from `/proc/PID/io` (`rchar`: every byte its `read`/`recv` calls
/// returned, sockets and files alike) of each process in the group. A process's reaped children are
/// added to its own figure by the kernel, so a tool that forks helpers is counted whole; what a child
/// read between its exit and its reaping is picked up at the next reading. Approximate by nature: a
/// download tool reads mostly its socket, but the files it reads (a CA bundle, a config) count too.
struct ProcessGroupIO {
    let group: pid_t
    /// The most counted so far: the total may dip while an exited child waits to be reaped.
    private(set) var counted: Int64 = 0

    init(group: pid_t) {
        self.group = group
    }

    /// Bytes read since the last call (0 when nothing new or nothing readable).
    mutating func newBytes() -> Int64 {
        let total = Self.members(of: group).reduce(Int64(0)) { sum, pid in
            let (result, overflow) = sum.addingReportingOverflow(Self.readBytes(of: pid) ?? 0)
            return overflow ? Int64.max : result
        }
        guard total > counted else { return 0 }
        defer { counted = total }
        return total - counted
    }

    /// The processes whose process group is `group` (the leader included).
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

    /// `rchar` of `/proc/PID/io`; nil when the process is gone or not readable.
    static func readBytes(of pid: pid_t) -> Int64? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8) else { return nil }
        return readBytes(fromIO: text)
    }

    static func readBytes(fromIO text: String) -> Int64? {
        for line in text.split(separator: "\n") where line.hasPrefix("rchar:") {
            return Int64(line.dropFirst("rchar:".count).trimmingCharacters(in: .whitespaces)).flatMap { $0 >= 0 ? $0 : nil }
        }
        return nil
    }
}
