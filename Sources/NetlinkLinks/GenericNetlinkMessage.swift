/// One generic netlink message as the kernel lays it out: `nlmsghdr` (16 bytes: length, type, flags,
/// sequence, port), `genlmsghdr` (4 bytes: command, version, reserved), then the attributes. Read from
/// bytes with every length checked; nil when the bytes do not hold a well-formed message.
struct GenericNetlinkMessage: Sendable {
    /// `nlmsg_type`: the generic netlink family's id (or a control type below 16: NOOP, ERROR, DONE).
    let type: UInt16
    let flags: UInt16
    /// `genlmsghdr.cmd`, e.g. `NL80211_CMD_NEW_INTERFACE`.
    let command: UInt8
    let attributes: NetlinkAttributes

    static let netlinkHeaderLength = 16
    static let genericHeaderLength = 4
    /// Types below this are netlink's own (NLMSG_NOOP, NLMSG_ERROR, NLMSG_DONE, NLMSG_OVERRUN).
    static let firstFamilyType: UInt16 = 16

    /// Reads one whole message: `bytes` starts at its `nlmsghdr` and holds exactly `nlmsg_len` bytes (the
    /// last message's padding may be missing).
    init?(_ bytes: ArraySlice<UInt8>) {
        let start = bytes.startIndex
        let headers = Self.netlinkHeaderLength + Self.genericHeaderLength
        guard bytes.count >= headers, Self.length(bytes) == bytes.count else { return nil }
        type = NetlinkAttributes.u16(bytes, at: start + 4)
        flags = NetlinkAttributes.u16(bytes, at: start + 6)
        guard type >= Self.firstFamilyType else { return nil }
        command = bytes[start + Self.netlinkHeaderLength]
        guard let attributes = NetlinkAttributes(bytes[(start + headers)...]) else { return nil }
        self.attributes = attributes
    }

    init?(_ bytes: [UInt8]) { self.init(bytes[...]) }

    /// Every generic netlink message of one datagram (a `recv`), in order: control messages (ERROR, DONE) are
    /// skipped, a malformed family message is left out. Stops at the first header that does not fit: what
    /// follows cannot be found again.
    static func messages(in datagram: ArraySlice<UInt8>) -> [GenericNetlinkMessage] {
        var messages: [GenericNetlinkMessage] = []
        var offset = datagram.startIndex
        while datagram.endIndex - offset >= netlinkHeaderLength {
            let length = length(datagram[offset...])
            guard length >= netlinkHeaderLength, length <= datagram.endIndex - offset else { break }
            if let message = GenericNetlinkMessage(datagram[offset..<(offset + length)]) { messages.append(message) }
            offset += min((length + 3) & ~3, datagram.endIndex - offset)
        }
        return messages
    }

    /// `nlmsg_len` of the message at the start of `bytes`, which holds at least 4 bytes.
    private static func length(_ bytes: ArraySlice<UInt8>) -> Int {
        Int(NetlinkAttributes.u32(bytes, at: bytes.startIndex))
    }
}
