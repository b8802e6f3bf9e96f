import Testing

@testable import Transfer

/// Proxies from the environment as curl reads them, `no_proxy` matching, and proxy URLs.
struct ProxySettingsTests {
    @Test(arguments: [
        // (no_proxy, host, port, direct?)
        ("example.com", "example.com", nil, true),
        ("example.com", "www.example.com", nil, true),
        (".example.com", "www.example.com", nil, true),
        (".example.com", "example.com", nil, true),
        ("example.com", "notexample.com", nil, false),
        ("example.com:8080", "example.com", 8080, true),
        ("example.com:8080", "example.com", 8081, false),
        ("example.com:8080", "example.com", nil, false),
        ("127.0.0.1:28443", "127.0.0.1", 28443, true),
        ("127.0.0.1:28443", "127.0.0.1", 443, false),
        ("[::1]:9999", "::1", 9999, true),
        ("[::1]:9999", "::1", 80, false),
        ("[::1]:x", "::1", nil, false),
        ("example.com:99999", "example.com", 80, false),
        ("10.0.0.0/8:3128", "10.1.2.3", 3128, true),
        ("10.0.0.0/8:3128", "10.1.2.3", 80, false),
        ("*", "anything.at.all", nil, true),
        ("127.0.0.1", "127.0.0.1", nil, true),
        ("127.0.0.1", "127.0.0.2", nil, false),
        ("10.0.0.0/8", "10.200.3.4", nil, true),
        ("10.0.0.0/8", "11.0.0.1", nil, false),
        ("192.168.1.0/24, fd00::/8", "fd12::1", nil, true),
        ("192.168.1.0/24,fd00::/8", "fe80::1", nil, false),
        ("[::1]", "::1", nil, true),
        ("localhost", "127.0.0.1", nil, false),
        ("  ", "example.com", nil, false),
        ("EXAMPLE.com", "Www.Example.COM.", nil, true),
    ])
    func noProxyMatches(list: String, host: String, port: Int?, direct: Bool) {
        #expect(NoProxy(list).matches(host: host, port: port) == direct)
    }

    /// The URL's port, or its scheme's, is the one a port-narrowed entry is matched against.
    @Test func aPortNarrowedEntryCoversOnlyItsPort() throws {
        let settings = try ProxySettings.environment([
            "http_proxy": "http://proxy.corp:3128", "https_proxy": "http://proxy.corp:3128",
            "no_proxy": "cache.lan:3142,mirror.lan:443",
        ])
        #expect(settings.server(for: "http://cache.lan:3142/debian/a.deb") == nil)
        #expect(settings.server(for: "http://cache.lan/debian/a.deb") != nil)
        #expect(settings.server(for: "https://mirror.lan/a.iso") == nil)
        #expect(settings.server(for: "https://mirror.lan:8443/a.iso") != nil)
        #expect(settings.server(for: "http://mirror.lan/a.iso") != nil)
    }

    @Test func environmentIsReadAsCurlReadsIt() throws {
        let settings = try ProxySettings.environment([
            "https_proxy": "http://proxy.corp:3128", "HTTPS_PROXY": "http://ignored:1",
            "HTTP_PROXY": "http://never-for-http:1", "all_proxy": "socks5h://socks.corp",
            "no_proxy": "internal.corp,10.0.0.0/8",
        ])
        #expect(
            settings.server(for: "https://cdn.example.com/a.iso")
                == ProxyServer(kind: .http, host: "proxy.corp", port: 3128))
        // Upper-case HTTP_PROXY is ignored (httpoxy): http falls back to all_proxy.
        #expect(
            settings.server(for: "http://cdn.example.com/a")
                == ProxyServer(kind: .socks5, host: "socks.corp", port: 1080))
        #expect(settings.server(for: "https://updates.internal.corp/x") == nil)
        #expect(settings.server(for: "https://10.1.2.3/x") == nil)
        #expect(try ProxySettings.environment([:]).server(for: "https://example.com/") == nil)
        #expect(try ProxySettings.environment(["https_proxy": ""]).server(for: "https://example.com/") == nil)
    }

    @Test func commandLineProxyKeepsNoProxy() throws {
        let env = try ProxySettings.environment(["no_proxy": "127.0.0.1"])
        let settings = env.replacingProxies(with: try ProxyServer.parse("127.0.0.1:18888", origin: "--proxy"))
        #expect(settings.server(for: "http://example.com/f")?.port == 18888)
        #expect(settings.server(for: "http://127.0.0.1:8080/f") == nil)
    }

    @Test func credentialsAreDecodedAndRedacted() throws {
        let proxy = try ProxyServer.parse("http://us%40er:p%3Ass@proxy:8080", origin: "https_proxy")
        #expect(proxy.username == "us@er")
        #expect(proxy.password == "p:ss")
        #expect(proxy.description == "http://us@er:<redacted>@proxy:8080")
        #expect(!proxy.description.contains("p:ss"))
    }

    @Test(arguments: [
        ("https://proxy:443", "https:// proxy"),
        ("socks4://proxy:1080", "not supported"),
        ("http://proxy:99999", "port"),
        ("http://", "not a proxy URL"),
        ("socks5://u:p@proxy", "SOCKS5 proxies with a user name"),
        ("http://bad%zzuser@proxy", "%-escape"),
    ])
    func badProxiesSayWhatToFix(text: String, fragment: String) {
        #expect(throws: TransferError.self) { try ProxyServer.parse(text, origin: "https_proxy") }
        do {
            _ = try ProxyServer.parse(text, origin: "https_proxy")
        } catch {
            #expect(error.code == .invalidURL)
            #expect(error.message.contains(fragment), "\(error.message)")
            #expect(error.message.hasPrefix("https_proxy"))
        }
    }

    @Test func environmentErrorsNameTheVariable() {
        do {
            _ = try ProxySettings.environment(["HTTPS_PROXY": "ftp://x"])
            Issue.record("accepted ftp://")
        } catch {
            #expect(error.message.hasPrefix("HTTPS_PROXY"))
        }
    }
}
