#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An IPv4 or IPv6 subnet in CIDR form (`192.168.1.0/24`, `fd00::/8`), for `networks:` address matches.
public struct Subnet: Sendable, Hashable, CustomStringConvertible {
    /// The network bytes (4 or 16).
    public var bytes: [UInt8]
    public var prefix: Int
    public var description: String

    /// The hint shown when a subnet does not parse.
    public static let hint = "write a subnet in CIDR form, e.g. 192.168.1.0/24, 10.0.0.0/8 or fd00::/8"

    /// Parses `address/prefix`; a bare address is a host route (/32 or /128).
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 1 || parts.count == 2, let bytes = Self.address(String(parts[0])) else { return nil }
        let maxPrefix = bytes.count * 8
        var prefix = maxPrefix
        if parts.count == 2 {
            guard let p = Int(parts[1]), p >= 0, p <= maxPrefix else { return nil }
            prefix = p
        }
        self.bytes = bytes
        self.prefix = prefix
        self.description = text
    }

    /// The bytes of an address written as text (IPv4 dotted or IPv6), nil when it is not one.
    static func address(_ text: String) -> [UInt8]? {
        if text.contains(":") {
            var storage = in6_addr()
            guard inet_pton(AF_INET6, text, &storage) == 1 else { return nil }
            return withUnsafeBytes(of: &storage) { Array($0) }
        }
        var storage = in_addr()
        guard inet_pton(AF_INET, text, &storage) == 1 else { return nil }
        return withUnsafeBytes(of: &storage) { Array($0) }
    }

    /// Whether an address (`192.168.1.20` or `192.168.1.20/24`, as links list them) lies in this subnet.
    public func contains(_ address: String) -> Bool {
        let host = address.split(separator: "/").first.map(String.init) ?? address
        guard let other = Self.address(host), other.count == bytes.count else { return false }
        var bits = prefix
        for i in 0..<bytes.count where bits > 0 {
            let take = min(8, bits)
            let mask: UInt8 = take == 8 ? 0xFF : ~(0xFF >> UInt8(take))
            if bytes[i] & mask != other[i] & mask { return false }
            bits -= take
        }
        return true
    }
}
