import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The addresses a source's host stands for, for `SourceJudge`: an address as written, or what the system's
/// resolver answers (on a thread of its own: `getaddrinfo` blocks).
enum SourceAddresses {
    /// At most this many addresses of one name are looked at.
    static let maxAddresses = 16

    static func resolve(_ host: String) async -> [String] {
        if isAddress(host) { return [host] }
        return await withCheckedContinuation { (c: CheckedContinuation<[String], Never>) in
            DispatchQueue.global().async { c.resume(returning: lookUp(host)) }
        }
    }

    /// A download's answers, kept for a while: a source is judged before every request it gets.
    final class Cache: Sendable {
        private let entries = Mutex<[String: (addresses: [String], at: ContinuousClock.Instant)]>([:])
        /// How long an answer is used.
        static let lifetime: Duration = .seconds(30)

        func resolve(_ host: String) async -> [String] {
            let now = ContinuousClock.now
            if let hit = entries.withLock({ $0[host] }), now - hit.at < Self.lifetime { return hit.addresses }
            let addresses = await SourceAddresses.resolve(host)
            entries.withLock { e in
                if e.count >= 64 { e.removeAll() }
                e[host] = (addresses, now)
            }
            return addresses
        }
    }

    /// Whether `text` is an IPv4 or IPv6 address (not a name).
    static func isAddress(_ text: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        let bare = text.split(separator: "%", maxSplits: 1).first.map(String.init) ?? text
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, bare, &v6) == 1
    }

    /// The IPv4 address an IPv4-mapped IPv6 address (`::ffff:127.0.0.3`, `::ffff:7f00:3`) stands for, as
    /// dotted text; any other text as it is. Pure.
    static func unmapped(_ address: String) -> String {
        guard address.contains(":"), !address.contains("%") else { return address }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, address, &v6) == 1 else { return address }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        guard bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff else { return address }
        return bytes[12..<16].map(String.init).joined(separator: ".")
    }

    /// `getaddrinfo` for TCP; the addresses as text, with an IPv6 link-local zone as `%link`.
    static func lookUp(_ host: String) -> [String] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return [] }
        defer { freeaddrinfo(first) }
        var out: [String] = []
        var node: UnsafeMutablePointer<addrinfo>? = first
        while let n = node, out.count < maxAddresses {
            var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if let address = n.pointee.ai_addr,
                getnameinfo(address, n.pointee.ai_addrlen, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST) == 0
            {
                let shown = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if !out.contains(shown) { out.append(shown) }
            }
            node = n.pointee.ai_next
        }
        return out
    }
}
