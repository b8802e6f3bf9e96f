import AsyncHTTPClient
import Synchronization

/// The HTTP clients of a download with several sources (docs/mirrors.md). `no_proxy` may send some sources
/// direct and others through a proxy, and an HTTP client has one proxy: the download's own client serves the
/// choice it was made for (the first URL's), and a client for another choice is made when a source first
/// needs it, registered in the download's connection tap, and shut down with the download. A client given by
/// the caller (`Download(request:client:)`) serves every source.
final class SourceClients: Sendable {
    private struct Made {
        var clients: [ProxyServer?: HTTPClient] = [:]
        var forwarder: HTTPClient?
    }

    let download: Download
    private let client: HTTPClient
    private let forwarder: HTTPClient?
    /// The proxy `client` was made for; nil: direct.
    private let choice: ProxyServer?
    private let tap: ConnectionTap?
    /// Whether clients for other choices may be made (false for a client the caller gave).
    private let canMake: Bool
    private let made = Mutex(Made())

    init(
        download: Download, client: HTTPClient, forwarder: HTTPClient?, choice: ProxyServer?, tap: ConnectionTap?,
        canMake: Bool
    ) {
        self.download = download
        self.client = client
        self.forwarder = forwarder
        self.choice = choice
        self.tap = tap
        self.canMake = canMake
    }

    /// A sender for requests to `url`, through the proxy the download's settings choose for it.
    func sender(for url: String) -> RequestSender {
        guard canMake else { return RequestSender(download: download, client: client, forwarder: forwarder) }
        let request = download.request
        let wanted = request.proxy.server(for: url)
        // An http:// URL through an HTTP proxy goes as a forwarded request (`ForwardedRequest`), whichever
        // client tunnels the https:// ones.
        if wanted?.kind == .http, RedactedURL.scheme(of: url) == "http" {
            let forwarder =
                self.forwarder
                ?? made.withLock { m in
                    if let f = m.forwarder { return f }
                    let f = HTTPClient(
                        eventLoopGroupProvider: .singleton,
                        configuration: TransferClient.forwarding(
                            noProgressTimeout: request.readTimeout, tls: request.tls, tap: tap))
                    m.forwarder = f
                    return f
                }
            return RequestSender(download: download, client: client, forwarder: forwarder)
        }
        guard wanted != choice else { return RequestSender(download: download, client: client, forwarder: nil) }
        let other = made.withLock { m in
            if let c = m.clients[wanted] { return c }
            let c = HTTPClient(
                eventLoopGroupProvider: .singleton,
                configuration: TransferClient.configuration(
                    noProgressTimeout: request.readTimeout, tls: request.tls, proxy: wanted, tap: tap,
                    http2: request.http2))
            m.clients[wanted] = c
            return c
        }
        return RequestSender(download: download, client: other, forwarder: nil)
    }

    /// How a request for `url` goes: its proxy (the URL's own choice, so a redirect to a host in `no_proxy`
    /// goes direct and one from it goes through the proxy), the client that reaches it that way, and the
    /// absolute-form request for an http:// URL through an HTTP proxy. With a client the caller gave, every
    /// URL takes the first URL's choice.
    func route(for url: String) -> (client: HTTPClient, proxy: ProxyServer?, forwarded: ForwardedRequest?) {
        let proxy = proxy(for: url)
        let sender = sender(for: url)
        let forwarded =
            sender.forwarder == nil || proxy?.kind != .http
            ? nil : proxy.flatMap { ForwardedRequest.make(url, through: $0) }
        return (forwarded == nil ? sender.client : sender.forwarder ?? sender.client, proxy, forwarded)
    }

    /// The proxy requests for `url` go through (nil: direct): its own choice, or with a client the caller
    /// gave, the first URL's.
    func proxy(for url: String) -> ProxyServer? {
        let request = download.request
        return request.proxy.server(for: canMake ? url : request.url)
    }

    /// Shuts down the clients made here (not the download's own).
    func shutdown() async {
        let (clients, forwarder) = made.withLock { m in
            defer { m = Made() }
            return (Array(m.clients.values), m.forwarder)
        }
        for c in clients { try? await c.shutdown() }
        if let forwarder { try? await forwarder.shutdown() }
    }
}
