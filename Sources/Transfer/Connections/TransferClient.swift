import AsyncHTTPClient
import NIOCore
import NIOHTTP1

/// The HTTP client configuration the downloader needs.
public enum TransferClient {
    /// HTTP/1.1 connections the client opens to one host at once.
    public static let perHostConnections = 64

    /// Receive buffers of up to 128 KiB: large reads on fast links, little memory held per connection.
    public static let receiveAllocation = 128 * 1024

    /// A configuration for downloads: TLS verification on (the default), redirects handled by the
    /// downloader (at most 10, https -> http refused), no decompression, HTTP/1.1 (one connection per
    /// segment), 128 KiB receive buffers, and a read timeout as the no-progress timeout.
    public static func configuration(
        noProgressTimeout: Duration = .seconds(30), tls: TLSSettings = .system, proxy: ProxyServer? = nil
    ) -> HTTPClient.Configuration {
        configuration(noProgressTimeout: noProgressTimeout, tls: tls, proxy: proxy, tap: nil)
    }

    /// The configuration of the client that forwards a download's http:// requests through an HTTP proxy
    /// (`ForwardedRequest`): connections go to the proxy itself, each request line in absolute form.
    static func forwarding(noProgressTimeout: Duration, tls: TLSSettings, tap: ConnectionTap?)
        -> HTTPClient.Configuration
    {
        configuration(noProgressTimeout: noProgressTimeout, tls: tls, proxy: nil, tap: tap, absoluteForm: true)
    }

    /// The same, with every connection registered in `tap` (a download's own client); `http2`: HTTP/2 where
    /// the server offers it in the TLS handshake (the segments become streams of one connection).
    static func configuration(
        noProgressTimeout: Duration, tls: TLSSettings, proxy: ProxyServer?, tap: ConnectionTap?,
        absoluteForm: Bool = false, http2: Bool = false
    )
        -> HTTPClient.Configuration
    {
        var c = HTTPClient.Configuration()
        c.tlsConfiguration = tls.configuration
        c.proxy = proxy.map(Self.proxy)
        c.redirectConfiguration = .disallow
        c.decompression = .disabled
        c.httpVersion = http2 ? .automatic : .http1Only
        // One connection per segment: room for `perHostConnections` segments to one host at once (the
        // engine keeps jobs × segments within it), so no request waits in the pool.
        c.connectionPool = .init(
            idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: perHostConnections)
        // A connection that cannot be made fails its request at once: the downloader retries with its own
        // back-off (and says why), and a TLS failure is reported in a moment, not after the connect timeout.
        c.connectionPool.retryConnectionEstablishment = false
        let ms = Int64(noProgressTimeout.secondsDouble * 1000)
        c.timeout = .init(connect: .seconds(15), read: .milliseconds(max(ms, 100)))
        c.http1_1ConnectionDebugInitializer = { channel in
            let target = receiveBuffers(channel).flatMap { () -> EventLoopFuture<Void> in
                guard absoluteForm else { return channel.eventLoop.makeSucceededVoidFuture() }
                return channel.eventLoop.submit {
                    let pipeline = channel.pipeline.syncOperations
                    let encoder = try pipeline.handler(type: HTTPRequestEncoder.self)
                    try pipeline.addHandler(AbsoluteFormTarget(), position: .after(encoder))
                }
            }
            guard let tap else { return target }
            return target.flatMap { tap.register(channel) }
        }
        if http2 {
            // The connection's channel (under its streams): counted and governed like an HTTP/1.1 one.
            c.http2ConnectionDebugInitializer = { channel in
                let buffers = receiveBuffers(channel)
                guard let tap else { return buffers }
                return buffers.flatMap { tap.register(channel, http2: true) }
            }
        }
        return c
    }

    /// Receive buffers of 64 KiB to `receiveAllocation` for a new connection; over TLS, one read per turn and
    /// the plaintext in buffers of its own size (`PlaintextCompaction`).
    static func receiveBuffers(_ channel: any Channel) -> EventLoopFuture<Void> {
        channel.setOption(
            ChannelOptions.recvAllocator,
            value: AdaptiveRecvByteBufferAllocator(
                minimum: 64 * 1024, initial: receiveAllocation, maximum: receiveAllocation)
        ).flatMap {
            channel.eventLoop.flatSubmit { PlaintextCompaction.install(on: channel) }
        }
    }

    /// The HTTP client's form of a proxy.
    static func proxy(_ server: ProxyServer) -> HTTPClient.Configuration.Proxy {
        switch server.kind {
        case .http:
            let authorization = server.username.map {
                HTTPClient.Authorization.basic(username: $0, password: server.password ?? "")
            }
            return .server(host: server.host, port: server.port, authorization: authorization)
        case .socks5:
            return .socksServer(host: server.host, port: server.port)
        }
    }
}
