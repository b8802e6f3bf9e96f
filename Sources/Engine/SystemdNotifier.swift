import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// systemd's notification protocol (`Type=notify`): one datagram of `KEY=value` lines to `$NOTIFY_SOCKET`
/// (a path, or an abstract name written `@name`). No library: sd_notify(3) is exactly this.
public struct SystemdNotifier: Sendable {
    /// The socket's address; nil when the daemon was not started by systemd with `NotifyAccess`.
    public let socketPath: String?
    /// Half of `WATCHDOG_USEC` when systemd asks for keep-alives (and `WATCHDOG_PID`, if set, is ours).
    public let watchdogInterval: Duration?

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        socketPath = path.flatMap { $0.hasPrefix("/") || $0.hasPrefix("@") ? $0 : nil }
        let forUs = environment["WATCHDOG_PID"].map { $0 == String(getpid()) } ?? true
        if forUs, let usec = environment["WATCHDOG_USEC"].flatMap(UInt64.init), usec > 0, usec <= 86_400_000_000 {
            watchdogInterval = .microseconds(Int64(usec / 2))
        } else {
            watchdogInterval = nil
        }
    }

    /// Sends `state` (`READY=1`, `STATUS=...`, several lines at once); false when there is nowhere to send
    /// or the datagram did not go (systemd treats notifications as best effort too).
    @discardableResult
    public func send(_ state: String) -> Bool {
        guard let socketPath else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(socketPath.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }  // abstract namespace
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (bytes.first == 0 ? 0 : 1))
        let payload = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                payload.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), sa, length) }
            }
        }
        return sent == payload.count
    }

    /// `MONOTONIC_USEC=`, which systemd wants beside `RELOADING=1`.
    public static var monotonicMicroseconds: UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
    }
}
