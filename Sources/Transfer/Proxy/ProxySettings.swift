/// Which proxy a download uses, read from the environment as curl reads it: `http_proxy` for http URLs
/// (lower case only: a CGI program's `HTTP_PROXY` can come from a request header), `https_proxy` or
/// `HTTPS_PROXY` for https, `all_proxy` or `ALL_PROXY` for either when its own is unset, and `no_proxy` or
/// `NO_PROXY` for hosts that go direct. The lower-case name wins when both are set; an empty value is
/// unset. `--proxy URL` replaces the three proxies (the no_proxy list still applies, as with curl);
/// `--no-proxy` connects directly whatever the environment says. Pure.
public struct ProxySettings: Sendable, Hashable {
    /// For http:// URLs.
    public var http: ProxyServer?
    /// For https:// URLs.
    public var https: ProxyServer?
    /// Hosts that go direct.
    public var noProxy: NoProxy

    public init(http: ProxyServer? = nil, https: ProxyServer? = nil, noProxy: NoProxy = .none) {
        self.http = http
        self.https = https
        self.noProxy = noProxy
    }

    /// No proxy at all.
    public static let direct = ProxySettings()

    /// One proxy for every URL, with the hosts of `noProxy` going direct.
    public static func every(_ proxy: ProxyServer, noProxy: NoProxy = .none) -> ProxySettings {
        ProxySettings(http: proxy, https: proxy, noProxy: noProxy)
    }

    /// The settings the environment gives; a malformed proxy variable is an error naming it.
    public static func environment(_ env: [String: String]) throws(TransferError) -> ProxySettings {
        // The first of `names` set to something other than spaces, and its name.
        func value(_ names: String...) -> (name: String, text: String)? {
            names.lazy.compactMap { name in env[name].flatMap { $0.trimmingSpacesT.isEmpty ? nil : (name, $0) } }.first
        }
        func server(_ found: (name: String, text: String)?) throws(TransferError) -> ProxyServer? {
            guard let found else { return nil }
            return try ProxyServer.parse(found.text, origin: found.name)
        }
        let all = try server(value("all_proxy", "ALL_PROXY"))
        return ProxySettings(
            http: try server(value("http_proxy")) ?? all,
            https: try server(value("https_proxy", "HTTPS_PROXY")) ?? all,
            noProxy: value("no_proxy", "NO_PROXY").map { NoProxy($0.text) } ?? .none
        )
    }

    /// The proxy a request to `url` goes through, or nil for a direct connection.
    public func server(for url: String) -> ProxyServer? {
        guard case .success(let authority) = URLAuthority.parse(url) else { return nil }
        let proxy = authority.scheme == "https" ? https : http
        let port = authority.port ?? (authority.scheme == "https" ? 443 : 80)
        guard let proxy, !noProxy.matches(host: authority.host, port: port) else { return nil }
        return proxy
    }

    /// The settings with `proxy` for every URL and this no_proxy list.
    public func replacingProxies(with proxy: ProxyServer) -> ProxySettings {
        .every(proxy, noProxy: noProxy)
    }
}
