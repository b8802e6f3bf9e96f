import CFileCalls
import Foundation
import Transfer

#if canImport(Glibc)
import Glibc
#endif

/// The bytes a command received over TCP, whatever the tool (read, recv, recvfrom, recvmsg, splice...):
/// the kernel's `tcpi_bytes_received` of every TCP socket its processes hold, asked through sock_diag
/// (as `ss -ti` does, no privilege needed for one's own processes). Sockets are found by the inodes in
/// /proc/PID/fd of the command's processes and then followed by their cookie; what a socket received
/// between the last look and its end comes from the kernel's report of its destruction. A connection that
/// opens and closes between two looks (`lookInterval`) is not seen: over a real link a connection lives
/// several round trips (connect, request, answer) before its data ends, far longer than that.
final class CommandTraffic {
    /// How often the command's processes are looked at for new sockets.
    static let lookInterval = Duration.milliseconds(20)

    /// The command's process group (its leader's pid).
    var group: pid_t
    private let dumpSocket: Int32
    private let destroySocket: Int32
    private var tally = SocketTally()
    /// Socket inodes already asked about (TCP or not), so a look asks the kernel only about new ones.
    private var asked = Set<UInt64>()
    /// The group's processes at the last full count (descendants are looked at every time as well).
    private var members: [pid_t] = []
    /// Why nothing can be counted, when sock_diag cannot be used; said once.
    let problem: String?

    init(group: pid_t) {
        self.group = group
        let dump = mw_sock_diag_open(0)
        let destroy = mw_sock_diag_open(1)
        if dump < 0 || destroy < 0 {
            problem =
                "cannot ask the kernel about the command's sockets (sock_diag: "
                + String(cString: strerror(-min(dump, destroy))) + "): its bytes are not counted against budgets"
            if dump >= 0 { close(dump) }
            if destroy >= 0 { close(destroy) }
            dumpSocket = -1
            destroySocket = -1
        } else {
            problem = nil
            dumpSocket = dump
            destroySocket = destroy
        }
    }

    deinit {
        if dumpSocket >= 0 { close(dumpSocket) }
        if destroySocket >= 0 { close(destroySocket) }
    }

    /// Bytes the command's sockets received since the last call, looking only for sockets it opened since:
    /// the kernel is asked only when there is one (cheap enough to run every `lookInterval`).
    func look() -> UInt64 {
        guard problem == nil else { return 0 }
        var total = takeDestroyed()
        let pids = Set(members + ProcessGroup.descendants(of: group))
        let fresh = pids.flatMap(ProcessGroup.socketInodes(of:)).filter { !asked.contains($0) }
        if !fresh.isEmpty {
            asked.formUnion(fresh)
            total = Self.adding(total, ask(inodes: fresh))
        }
        return total
    }

    /// Bytes since the last call, over every process of the group (a scan of /proc) and every followed socket.
    func count() -> UInt64 {
        guard problem == nil else { return 0 }
        members = ProcessGroup.members(of: group)
        var total = takeDestroyed()
        let inodes = Set(members + ProcessGroup.descendants(of: group)).flatMap(ProcessGroup.socketInodes(of:))
        asked.formUnion(inodes)
        total = Self.adding(total, ask(inodes: inodes))
        return total
    }

    /// Once the command has exited: counts until the kernel has reported the end of every followed socket,
    /// or `timeout` (a socket some other process kept, or one waiting for its peer's FIN).
    func finish(timeout: Duration = .milliseconds(500)) async -> UInt64 {
        var total = count()
        let deadline = ContinuousClock.now + timeout
        while !tally.counted.isEmpty, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
            total = Self.adding(total, count())
        }
        return total
    }

    /// The followed sockets' destroy reports waiting on the broadcast socket.
    private func takeDestroyed() -> UInt64 {
        let cookies = tally.cookies
        guard !cookies.isEmpty else {
            // Nothing followed: the waiting reports are other programs' sockets.
            var dropped: Int32 = 0
            _ = mw_sock_diag_destroyed(destroySocket, nil, 0, nil, 0, &dropped)
            return 0
        }
        var out = [mw_tcp_socket](repeating: mw_tcp_socket(), count: cookies.count)
        var dropped: Int32 = 0
        let found = mw_sock_diag_destroyed(destroySocket, cookies, cookies.count, &out, out.count, &dropped)
        guard found > 0 else { return 0 }
        return out[0..<Int(found)].reduce(UInt64(0)) {
            Self.adding($0, tally.destroyed(cookie: $1.cookie, bytesReceived: $1.bytes_received))
        }
    }

    /// Asks the kernel about the TCP sockets with these inodes and every followed one.
    private func ask(inodes: [UInt64]) -> UInt64 {
        let cookies = tally.cookies
        let capacity = inodes.count + cookies.count
        guard capacity > 0 else { return 0 }
        var total: UInt64 = 0
        for family in [AF_INET, AF_INET6] {
            var out = [mw_tcp_socket](repeating: mw_tcp_socket(), count: capacity)
            let found = mw_sock_diag_dump(
                dumpSocket, family, inodes, inodes.count, cookies, cookies.count, &out, capacity)
            guard found > 0 else { continue }
            for socket in out[0..<Int(found)] {
                total = Self.adding(total, tally.seen(cookie: socket.cookie, bytesReceived: socket.bytes_received))
            }
        }
        return total
    }

    /// Saturating: a count never traps.
    static func adding(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? .max : sum
    }
}
