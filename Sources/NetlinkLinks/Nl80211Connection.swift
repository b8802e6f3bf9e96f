import CNetlink
import Foundation

/// The kernel side of the wireless hints: a request socket for the interface and BSS dumps, and an event
/// socket joined to nl80211's `mlme` and `config` groups. Owned by one thread from `open()` to the end.
final class Nl80211Connection {
    private let requests: OpaquePointer
    private let events: OpaquePointer
    private let family: Int32
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)

    private init(requests: OpaquePointer, events: OpaquePointer, family: Int32) {
        self.requests = requests
        self.events = events
        self.family = family
    }

    deinit {
        nl_socket_free(requests)
        nl_socket_free(events)
    }

    /// The event socket's descriptor, to poll.
    var eventDescriptor: Int32 { nl_socket_get_fd(events) }

    /// Connects and subscribes; nil when the kernel has no nl80211 family (no cfg80211: a container, a
    /// machine without Wi-Fi drivers). `family` and `groups` are nl80211's but for tests, which exercise
    /// the same sockets and dumps on the controller family (`nlctrl`) every kernel has.
    static func open(
        family name: String = Nl80211.familyName, groups: [String] = Nl80211.groups
    ) throws(NetlinkError) -> Nl80211Connection? {
        guard let requests = nl_socket_alloc() else {
            throw NetlinkError(.socket, "cannot allocate a netlink socket (out of memory?)")
        }
        guard let events = nl_socket_alloc() else {
            nl_socket_free(requests)
            throw NetlinkError(.socket, "cannot allocate a netlink socket (out of memory?)")
        }
        var result = genl_connect(requests)
        if result == 0 { result = genl_connect(events) }
        guard result == 0 else {
            nl_socket_free(requests)
            nl_socket_free(events)
            throw .libnl(.socket, "connecting a generic netlink socket", result)
        }
        let family = genl_ctrl_resolve(requests, name)
        guard family >= 0 else {
            nl_socket_free(requests)
            nl_socket_free(events)
            if family == -NLE_OBJ_NOTFOUND { return nil }
            throw .libnl(.socket, "resolving the \(name) family", family)
        }
        // From here the connection owns (and frees) both sockets.
        let connection = Nl80211Connection(requests: requests, events: events, family: family)
        nl_socket_enable_msg_peek(requests)  // BSS entries carry IEs: size each read to the datagram
        nl_socket_disable_seq_check(events)
        _ = nl_socket_set_buffer_size(events, 256 << 10, 0)
        for group in groups {
            let id = genl_ctrl_resolve_grp(requests, name, group)
            guard id >= 0 else { throw .libnl(.subscribe, "resolving \(name)'s \(group) group", id) }
            result = nl_socket_add_membership(events, id)
            guard result == 0 else { throw .libnl(.subscribe, "joining \(name)'s \(group) group", result) }
        }
        result = nl_socket_set_nonblocking(events)
        guard result == 0 else { throw .libnl(.socket, "making the nl80211 event socket non-blocking", result) }
        return connection
    }

    /// Every wireless interface, and the current BSSID of each client interface: one `GET_INTERFACE` dump,
    /// then one `GET_SCAN` dump per client interface. An interface that vanishes between the two is skipped.
    func read() throws(NetlinkError) -> WirelessState {
        let interfaces = try dump(Nl80211.Command.getInterface)
        let clients = WirelessState(interfaceMessages: interfaces, scanMessages: []).clientIndexes
        var scans: [GenericNetlinkMessage] = []
        for index in clients {
            if let messages = try? dump(Nl80211.Command.getScan, interface: index) { scans += messages }
        }
        return WirelessState(interfaceMessages: interfaces, scanMessages: scans)
    }

    /// Reads every pending event: true when one of them may change an SSID or BSSID, or when events were lost
    /// (the receive buffer overran), so everything must be read again.
    func readEvents() throws(NetlinkError) -> Bool {
        var changed = false
        while true {
            let count = recv(eventDescriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count > 0 {
                let ours = GenericNetlinkMessage.messages(in: buffer[..<count]).filter {
                    $0.type == UInt16(truncatingIfNeeded: family)
                }
                if ours.contains(where: { WirelessState.changes(after: $0.command) }) { changed = true }
                continue
            }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && errno == ENOBUFS {
                changed = true
                continue
            }
            if count < 0 && errno != EAGAIN && errno != EWOULDBLOCK {
                throw NetlinkError(.socket, "reading nl80211 events failed: \(String(cString: strerror(errno)))")
            }
            return changed
        }
    }

    /// One dump's messages, parsed; tried again (up to 3 times) when the kernel says the dump was
    /// interrupted by a change.
    func dump(_ command: UInt8, interface: UInt32 = 0) throws(NetlinkError) -> [GenericNetlinkMessage] {
        var attempt = 0
        while true {
            let collector = MessageCollector()
            var result = mw_genl_dump_request(requests, family, command, interface)
            if result == 0 {
                result = withExtendedLifetime(collector) {
                    let argument = Unmanaged.passUnretained(collector).toOpaque()
                    let set = mw_on_valid_message(requests, MessageCollector.callback, argument)
                    return set < 0 ? set : nl_recvmsgs_default(requests)
                }
            }
            if result >= 0 { return collector.messages }
            attempt += 1
            guard result == -NLE_DUMP_INTR, attempt < 3 else {
                throw .libnl(.dump, "the generic netlink dump (family \(family), command \(command))", result)
            }
        }
    }
}

/// Where a dump's messages go, from libnl's valid-message callback.
private final class MessageCollector {
    var messages: [GenericNetlinkMessage] = []

    static let callback: nl_recvmsg_msg_cb_t = { message, argument in
        guard let message, let argument, let header = nlmsg_hdr(message) else { return Int32(NL_SKIP.rawValue) }
        let collector = Unmanaged<MessageCollector>.fromOpaque(argument).takeUnretainedValue()
        let bytes = UnsafeRawBufferPointer(start: header, count: Int(header.pointee.nlmsg_len))
        if let parsed = GenericNetlinkMessage(Array(bytes)) { collector.messages.append(parsed) }
        return Int32(NL_OK.rawValue)
    }
}
