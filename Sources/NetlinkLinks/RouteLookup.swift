import CNetlink
import Links
import Synchronization

/// Asks the kernel which link it would send packets to an address out of (`ip route get`): its routing
/// decision, with the routes other than the default ones (a static route, a VPN's) and policy rules that the
/// snapshots leave out. One socket, opened by the monitor thread in the namespace it watches and used under a
/// lock; nil answers while the monitor is not running.
final class RouteLookup: Sendable {
    private struct Socket: @unchecked Sendable {
        var raw: OpaquePointer
    }

    private let socket = Mutex<Socket?>(nil)

    /// Opens the lookup socket; called on the monitor thread, inside its namespace.
    func open() {
        guard let raw = nl_socket_alloc() else { return }
        nl_socket_disable_auto_ack(raw)
        guard nl_connect(raw, NETLINK_ROUTE) == 0 else {
            nl_socket_free(raw)
            return
        }
        let old = socket.withLock { s in
            let old = s
            s = Socket(raw: raw)
            return old
        }
        if let old { nl_socket_free(old.raw) }
    }

    /// Closes it (the monitor stops or reopens).
    func close() {
        socket.withLock { s in
            if let old = s { nl_socket_free(old.raw) }
            s = nil
        }
    }

    /// The link packets to `address` (IPv4 or IPv6 text, no zone) leave by, from the local address `source` when
    /// given; nil when the kernel has no route for it (or no single link), the text is no address, or the
    /// monitor is not running.
    func outgoingRoute(to address: String, from source: String?) -> KernelRoute? {
        socket.withLock { s -> KernelRoute? in
            guard let raw = s?.raw else { return nil }
            var prefix: Int32 = -1
            let index = mw_route_get_oif(raw, address, source, &prefix)
            return index > 0 ? KernelRoute(linkIndex: Int(index), isDefault: prefix == 0) : nil
        }
    }
}
