/// The attributes of one netlink message or nested attribute: the `nlattr` TLVs (length, type, payload),
/// read from bytes the kernel sent, with every length checked before use.
///
/// Layout: a 4-byte header (`nla_len`: u16, header included; `nla_type`: u16, host byte order), the payload,
/// then padding to a multiple of 4. The type's two top bits (`NLA_F_NESTED`, `NLA_F_NET_BYTEORDER`) are
/// masked off. A malformed buffer — an attribute shorter than its header, longer than what is left, or
/// trailing bytes that cannot hold a header — gives nil: no partial reading of a buffer we do not trust.
struct NetlinkAttributes: Sendable {
    /// Each attribute's type and payload (padding excluded), in the order they came.
    let entries: [(type: UInt16, payload: ArraySlice<UInt8>)]

    static let headerLength = 4

    init?(_ bytes: ArraySlice<UInt8>) {
        var entries: [(type: UInt16, payload: ArraySlice<UInt8>)] = []
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let left = bytes.endIndex - offset
            guard left >= Self.headerLength else { return nil }
            let length = Int(Self.u16(bytes, at: offset))
            guard length >= Self.headerLength, length <= left else { return nil }
            let type = Self.u16(bytes, at: offset + 2) & 0x3FFF
            entries.append((type, bytes[(offset + Self.headerLength)..<(offset + length)]))
            // The padding of the last attribute may be cut at the end of the buffer (never past it).
            offset += min((length + 3) & ~3, left)
        }
        self.entries = entries
    }

    init?(_ bytes: [UInt8]) { self.init(bytes[...]) }

    /// The first attribute of `type`'s payload, or nil when there is none.
    subscript(type: UInt16) -> ArraySlice<UInt8>? {
        entries.first { $0.type == type }?.payload
    }

    /// A u32 attribute; nil when absent or not exactly 4 bytes.
    func u32(_ type: UInt16) -> UInt32? {
        guard let payload = self[type], payload.count == 4 else { return nil }
        return Self.u32(payload, at: payload.startIndex)
    }

    /// A NUL-terminated string attribute (the kernel's NLA_NUL_STRING / NLA_STRING); nil when absent, empty or
    /// not UTF-8.
    func string(_ type: UInt16) -> String? {
        guard let payload = self[type] else { return nil }
        let text = payload.prefix { $0 != 0 }
        guard !text.isEmpty else { return nil }
        return String(validating: text, as: UTF8.self)
    }

    /// A nested attribute's attributes; nil when absent or malformed.
    func nested(_ type: UInt16) -> NetlinkAttributes? {
        self[type].flatMap { NetlinkAttributes($0) }
    }

    /// A u32 in host byte order (netlink's), at `index` of `bytes`; the caller has checked the bounds.
    static func u32(_ bytes: ArraySlice<UInt8>, at index: Int) -> UInt32 {
        let littleEndian = bytes[index..<(index + 4)].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return UInt32(littleEndian: littleEndian)
    }

    /// A u16 in host byte order (netlink's), at `index` of `bytes`; the caller has checked the bounds.
    static func u16(_ bytes: ArraySlice<UInt8>, at index: Int) -> UInt16 {
        let littleEndian = UInt16(bytes[index]) | UInt16(bytes[index + 1]) << 8
        return UInt16(littleEndian: littleEndian)
    }
}
