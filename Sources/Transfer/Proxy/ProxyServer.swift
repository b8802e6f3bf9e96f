/// One proxy, from a URL such as `http://user:secret@proxy.corp:3128` or `socks5h://127.0.0.1:1080`.
/// An HTTP proxy gets http:// requests as proxied requests in absolute form (`ForwardedRequest`) and https://
/// ones through a CONNECT tunnel, as curl does; credentials go in `Proxy-Authorization`. Pure.
public struct ProxyServer: Sendable, Hashable, CustomStringConvertible {
    /// How the proxy is spoken to.
    public enum Kind: String, Sendable, Hashable {
        /// An HTTP proxy: proxied requests for http://, a CONNECT tunnel per connection for https://.
        case http
        /// A SOCKS5 proxy (`socks5://` and `socks5h://`; the host name is sent to the proxy).
        case socks5
    }

    public var kind: Kind
    public var host: String
    public var port: Int
    /// Percent-decoded credentials from the URL.
    public var username: String?
    public var password: String?

    public init(kind: Kind, host: String, port: Int, username: String? = nil, password: String? = nil) {
        self.kind = kind
        self.host = host
        self.port = port
        self.username = username
        self.password = password
    }

    /// The proxy as it is shown: its URL with any password replaced by `<redacted>`.
    public var description: String {
        let h = host.contains(":") ? "[\(host)]" : host
        var user = ""
        if let username {
            user = username + (password == nil ? "" : ":<redacted>") + "@"
        }
        return "\(kind == .http ? "http" : "socks5")://\(user)\(h):\(port)"
    }

    /// Reads a proxy URL as curl does: no scheme means `http://`, no port means 1080. `https://` (TLS to
    /// the proxy itself) and SOCKS4 are refused with what to use instead. `origin` names where the text
    /// came from (`--proxy`, `https_proxy`) for the message.
    public static func parse(_ text: String, origin: String) throws(TransferError) -> ProxyServer {
        let trimmed = text.trimmingSpacesT
        let url = trimmed.contains("://") ? trimmed : "http://" + trimmed
        let shown = RedactedURL.withoutCredentials(url)
        guard !url.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) else {
            throw TransferError(.invalidURL, "\(origin): the proxy \(shown) contains spaces or control characters.")
        }
        let authority: URLAuthority
        switch URLAuthority.parse(url) {
        case .success(let a): authority = a
        case .failure(.badPort(let port)):
            throw TransferError(
                .invalidURL,
                "\(origin): the proxy \(shown) has the port \"\(port)\"; a port is a number from 1 to 65535.")
        case .failure(.ipv6Zone):
            throw TransferError(
                .invalidURL,
                "\(origin): the proxy \(shown) names an IPv6 zone (%25...), which is not supported; use its global or unique-local address."
            )
        case .failure:
            throw TransferError(.invalidURL, "\(origin): \(shown) is not a proxy URL; write http://HOST:PORT.")
        }
        let kind: Kind
        switch authority.scheme {
        case "http": kind = .http
        case "socks5", "socks5h": kind = .socks5
        case "https":
            throw TransferError(
                .invalidURL,
                "\(origin): \(shown) is an https:// proxy (TLS to the proxy itself), which Meterwise does not speak; use the proxy's http:// address (https downloads are still encrypted end to end through CONNECT)."
            )
        default:
            throw TransferError(
                .invalidURL,
                "\(origin): the proxy scheme \"\(authority.scheme)\" is not supported; use http:// or socks5://.")
        }
        var username: String?
        var password: String?
        if let userinfo = authority.userinfo {
            if kind == .socks5 {
                throw TransferError(
                    .invalidURL,
                    "\(origin): SOCKS5 proxies with a user name and password are not supported; use an http:// proxy or one without credentials."
                )
            }
            let parts = userinfo.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            guard let user = percentDecoded(parts[0]), let pass = parts.count > 1 ? percentDecoded(parts[1]) : "" else {
                throw TransferError(.invalidURL, "\(origin): the proxy's user name or password has a bad %-escape.")
            }
            username = user
            password = parts.count > 1 ? pass : nil
        }
        return ProxyServer(
            kind: kind, host: authority.host, port: authority.port ?? 1080, username: username, password: password)
    }

    /// `%41` as `A`; nil for a malformed escape or bytes that are not UTF-8.
    static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var i = text.utf8.startIndex
        let utf8 = text.utf8
        while i != utf8.endIndex {
            let byte = utf8[i]
            if byte == UInt8(ascii: "%") {
                let h = utf8.index(after: i)
                guard h != utf8.endIndex else { return nil }
                let l = utf8.index(after: h)
                guard l != utf8.endIndex, let hi = hexValue(utf8[h]), let lo = hexValue(utf8[l]) else { return nil }
                bytes.append(hi << 4 | lo)
                i = utf8.index(after: l)
            } else {
                bytes.append(byte)
                i = utf8.index(after: i)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
