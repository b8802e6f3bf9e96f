#if canImport(Glibc)
import Glibc
#endif

/// A `no_proxy` list as curl reads it: entries separated by commas or spaces; `*` alone matches every
/// host; a name matches itself and its subdomains (`example.com` and `.example.com` both match
/// `www.example.com`, neither matches `notexample.com`); an IP address matches that address only, and a
/// CIDR (`10.0.0.0/8`, `fd00::/8`) every address in it. A `:port` on a name or an address narrows the entry
/// to that port (`cache.lan:3142` leaves `cache.lan:80` to the proxy), as Go and wget read it; curl, which
/// never matches such an entry, proxies every port of it. Names are not resolved: `localhost` does not
/// match `127.0.0.1`. Pure.
public struct NoProxy: Sendable, Hashable {
    enum Entry: Sendable, Hashable {
        case all
        case domain(String, port: Int?)
        case network([UInt8], prefix: Int, port: Int?)
    }

    var entries: [Entry]

    /// The empty list: every host uses the proxy.
    public static let none = NoProxy(entries: [])

    init(entries: [Entry]) {
        self.entries = entries
    }

    /// Reads a list; entries that are neither names nor addresses are skipped (as curl does).
    public init(_ text: String) {
        var entries: [Entry] = []
        for raw in text.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }) {
            var item = raw.lowercased()
            if item == "*" {
                entries.append(.all)
                continue
            }
            var port: Int?
            if item.hasPrefix("[") {
                // [::1] or [::1]:8080
                guard let close = item.firstIndex(of: "]") else { continue }
                let after = item[item.index(after: close)...]
                if !after.isEmpty {
                    guard after.hasPrefix(":"), let n = Self.port(after.dropFirst()) else { continue }
                    port = n
                }
                item = String(item[item.index(after: item.startIndex)..<close])
            } else if item.filter({ $0 == ":" }).count == 1, let colon = item.firstIndex(of: ":") {
                // name:port or 1.2.3.4:port: the entry covers that port only. A port that is not one skips
                // the entry.
                guard let n = Self.port(item[item.index(after: colon)...]) else { continue }
                port = n
                item = String(item[..<colon])
            }
            if let slash = item.firstIndex(of: "/") {
                guard let bits = Int(item[item.index(after: slash)...]),
                    let address = Self.address(String(item[..<slash])),
                    (0...address.count * 8).contains(bits)
                else { continue }
                entries.append(.network(address, prefix: bits, port: port))
            } else if let address = Self.address(item) {
                entries.append(.network(address, prefix: address.count * 8, port: port))
            } else {
                while item.hasPrefix(".") { item.removeFirst() }
                while item.hasSuffix(".") { item.removeLast() }
                guard !item.isEmpty else { continue }
                entries.append(.domain(item, port: port))
            }
        }
        self.entries = entries
    }

    /// Whether `host` (a name, or an address without brackets) at `port` goes direct; with no port, only
    /// entries for every port are looked at.
    public func matches(host: String, port: Int? = nil) -> Bool {
        var name = host.lowercased()
        while name.hasSuffix(".") { name.removeLast() }
        let address = Self.address(name)
        for entry in entries {
            switch entry {
            case .all:
                return true
            case .domain(let domain, let only):
                if address == nil, only == nil || only == port, name == domain || name.hasSuffix("." + domain) {
                    return true
                }
            case .network(let network, let prefix, let only):
                if let address, only == nil || only == port, address.count == network.count,
                    Self.prefix(address, network, bits: prefix)
                {
                    return true
                }
            }
        }
        return false
    }

    /// A port as written in an entry: 1 to 65535 in decimal digits; nil for anything else.
    static func port(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.count <= 5, text.allSatisfy({ ("0"..."9").contains($0) }), let n = Int(text),
            (1...65535).contains(n)
        else { return nil }
        return n
    }

    /// Whether this list is empty.
    public var isEmpty: Bool { entries.isEmpty }

    /// The 4 or 16 bytes of an IPv4 or IPv6 address; nil for anything else.
    static func address(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }

    static func prefix(_ a: [UInt8], _ b: [UInt8], bits: Int) -> Bool {
        var left = bits
        for i in a.indices where left > 0 {
            let take = min(8, left)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - take))
            if a[i] & mask != b[i] & mask { return false }
            left -= take
        }
        return true
    }
}
