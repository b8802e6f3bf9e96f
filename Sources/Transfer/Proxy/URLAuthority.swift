/// The parts of a URL's authority (`scheme://user:password@host:port/...`), read without Foundation and
/// without resolving anything. Pure; shared by the download URL check and the proxy settings.
public struct URLAuthority: Sendable, Hashable {
    /// What is wrong with an authority.
    public enum Problem: Error, Sendable, Hashable {
        case noHost
        case unclosedIPv6
        case textAfterIPv6
        case badPort(String)
        /// An IPv6 address with a zone (`[fe80::1%25eth0]`): the connection code cannot scope an address.
        case ipv6Zone
    }

    /// The scheme in lower case (`http`).
    public var scheme: String
    /// The `user:password` before `@`, still percent-encoded; nil when absent.
    public var userinfo: String?
    /// The host as written, in lower case, IPv6 without its brackets (`::1`).
    public var host: String
    /// The port when one is written.
    public var port: Int?

    /// The authority of `url`, or what is wrong with it. Nil scheme or no `//`: `.noHost`.
    public static func parse(_ url: String) -> Result<URLAuthority, Problem> {
        guard let scheme = RedactedURL.scheme(of: url) else { return .failure(.noHost) }
        var rest = Substring(url.dropFirst(scheme.count + 1))
        guard rest.hasPrefix("//") else { return .failure(.noHost) }
        rest = rest.dropFirst(2)
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let at = authority.lastIndex(of: "@")
        let userinfo = at.map { String(authority[..<$0]) }
        let hostPort = at.map { authority[authority.index(after: $0)...] } ?? authority
        var host = Substring(hostPort)
        var port: Substring?
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else { return .failure(.unclosedIPv6) }
            host = hostPort[hostPort.index(after: hostPort.startIndex)..<close]
            if host.contains("%") { return .failure(.ipv6Zone) }
            let after = hostPort[hostPort.index(after: close)...]
            if after.hasPrefix(":") {
                port = after.dropFirst()
            } else if !after.isEmpty {
                return .failure(.textAfterIPv6)
            }
        } else if let colon = hostPort.lastIndex(of: ":") {
            host = hostPort[..<colon]
            port = hostPort[hostPort.index(after: colon)...]
        }
        guard !host.isEmpty else { return .failure(.noHost) }
        var number: Int?
        if let port {
            guard !port.isEmpty, port.count <= 5, port.allSatisfy(\.isASCII), let n = Int(port), (1...65535).contains(n)
            else { return .failure(.badPort(String(port))) }
            number = n
        }
        return .success(URLAuthority(scheme: scheme, userinfo: userinfo, host: host.lowercased(), port: number))
    }

    /// The port, or the scheme's default (443 for https, 80 otherwise).
    public var effectivePort: Int { port ?? (scheme == "https" ? 443 : 80) }
}
