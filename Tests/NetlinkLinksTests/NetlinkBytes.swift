/// Builds netlink bytes exactly as the kernel lays them out (host byte order, every attribute padded to 4
/// bytes), from the attribute numbers of `<linux/nl80211.h>`: the tests' recorded fixtures.
enum NetlinkBytes {
    /// One `nlattr`: length (header included), type (with `NLA_F_NESTED` when `nested`), payload, padding.
    static func attribute(_ type: UInt16, _ payload: [UInt8], nested: Bool = false) -> [UInt8] {
        var bytes = host(UInt16(4 + payload.count)) + host(type | (nested ? 0x8000 : 0)) + payload
        while bytes.count % 4 != 0 { bytes.append(0) }
        return bytes
    }

    static func u32(_ type: UInt16, _ value: UInt32) -> [UInt8] { attribute(type, host(value)) }

    /// A NUL-terminated string, as the kernel puts an interface name.
    static func string(_ type: UInt16, _ text: String) -> [UInt8] { attribute(type, Array(text.utf8) + [0]) }

    /// A whole generic netlink message: `nlmsghdr`, `genlmsghdr` (version 1), the attributes.
    static func message(
        command: UInt8, attributes: [UInt8], family: UInt16 = 0x1c, flags: UInt16 = 2, sequence: UInt32 = 1
    ) -> [UInt8] {
        host(UInt32(20 + attributes.count)) + host(family) + host(flags) + host(sequence) + host(UInt32(0x1f40))
            + [command, 1, 0, 0] + attributes
    }

    /// An interface as `GET_INTERFACE` answers.
    static func interface(index: UInt32, name: String, type: UInt32, ssid: [UInt8]? = nil) -> [UInt8] {
        u32(3, index) + string(4, name) + u32(5, type) + (ssid.map { attribute(52, $0) } ?? [])
    }

    /// A scan result as the BSS dump gives it; `status` nil when the interface has nothing to do with it.
    static func bss(interface: UInt32, bssid: [UInt8], status: UInt32?, nested: Bool = false) -> [UInt8] {
        let inner = attribute(1, bssid) + u32(2, 2412) + (status.map { u32(9, $0) } ?? [])
        return u32(46, 5) + u32(3, interface) + attribute(47, inner, nested: nested)
    }

    /// Hex text as bytes, whitespace and `//` comments ignored: for dumps pasted as the kernel sent them.
    static func hex(_ text: String) -> [UInt8] {
        let code = text.split(separator: "\n").map { $0.prefix { $0 != "/" } }.joined()
        let digits = Array(code.filter(\.isHexDigit))
        return stride(from: 0, to: digits.count - 1, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
    }

    static func host<T: FixedWidthInteger>(_ value: T) -> [UInt8] { withUnsafeBytes(of: value) { Array($0) } }
}
