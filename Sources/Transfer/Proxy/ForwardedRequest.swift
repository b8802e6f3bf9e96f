import AsyncHTTPClient
import NIOCore
import NIOHTTP1

/// An http:// request through an HTTP proxy, sent as curl sends it: to the proxy, with the URL in absolute
/// form as the request target (`GET http://origin:8080/f.bin HTTP/1.1`) and the origin in `Host` — no
/// CONNECT tunnel, which stock proxies allow only to port 443 (squid's `http_access deny CONNECT
/// !SSL_ports`). https:// keeps its CONNECT tunnel, so TLS stays end to end. Pure.
struct ForwardedRequest: Sendable, Equatable {
    /// What the HTTP client is given: the proxy's address with the origin's path and query.
    var clientURL: String
    /// The `Host` header: the origin's authority as written in the URL, credentials left out.
    var host: String

    /// The request for `url` through `proxy`; nil when `url` is not an http:// URL with a host.
    static func make(_ url: String, through proxy: ProxyServer) -> ForwardedRequest? {
        guard RedactedURL.scheme(of: url) == "http" else { return nil }
        let rest = url.dropFirst("http://".count)
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let hostPort = authority.lastIndex(of: "@").map { authority[authority.index(after: $0)...] } ?? authority
        guard !hostPort.isEmpty else { return nil }
        var target = rest[authority.endIndex...].prefix { $0 != "#" }
        if !target.hasPrefix("/") { target = "/" + target }
        let proxyHost = proxy.host.contains(":") ? "[\(proxy.host)]" : proxy.host
        return ForwardedRequest(clientURL: "http://\(proxyHost):\(proxy.port)\(target)", host: String(hostPort))
    }
}

/// On a connection to an HTTP proxy, turns the request line's target into the absolute form
/// `http://HOST/path` from the request's own `Host` header (`ForwardedRequest`).
final class AbsoluteFormTarget: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        var part = unwrapOutboundIn(data)
        if case .head(var head) = part, head.uri.hasPrefix("/"), let host = head.headers.first(name: "Host") {
            head.uri = "http://" + host + head.uri
            part = .head(head)
        }
        context.write(wrapOutboundOut(part), promise: promise)
    }
}

extension HTTPClientRequest {
    /// A GET of `url` as the downloader sends it: the body as stored (`identity`), Meterwise's user agent, and
    /// through an HTTP proxy in absolute form when `forwarded` (with the proxy's credentials, if it has any);
    /// the URL's own `user:password@` as `Authorization: Basic`, as curl sends it.
    static func download(_ url: String, forwarded: ForwardedRequest?, proxy: ProxyServer?) -> HTTPClientRequest {
        let (plain, authorization) = URLCredentials.split(url)
        var http = HTTPClientRequest(url: forwarded?.clientURL ?? plain)
        http.method = .GET
        if let authorization { http.headers.add(name: "Authorization", value: "Basic \(authorization)") }
        if let forwarded {
            http.headers.add(name: "Host", value: forwarded.host)
            if let authorization = proxy?.basicAuthorization {
                http.headers.add(name: "Proxy-Authorization", value: "Basic \(authorization)")
            }
        }
        http.headers.add(name: "Accept-Encoding", value: "identity")
        http.headers.add(name: "User-Agent", value: "meterwise")
        return http
    }
}
