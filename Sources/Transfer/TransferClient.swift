import AsyncHTTPClient
import NIOCore

/// The HTTP client configuration the downloader needs.
public enum TransferClient {
    /// HTTP/1.1 connections the client opens to one host at once.
    public static let perHostConnections = 64

    /// Receive buffers of 256 KiB: fewer, larger reads on fast links (the bench's finding).
    public static let receiveAllocation = 256 * 1024

    /// A configuration for downloads: TLS verification on (the default), redirects handled by the
    /// downloader (at most 10, https -> http refused), no decompression, HTTP/1.1 (one connection per
    /// segment), 256 KiB receive buffers, and a read timeout as the no-progress timeout.
    public static func configuration(noProgressTimeout: Duration = .seconds(30)) -> HTTPClient.Configuration {
        var c = HTTPClient.Configuration()
        c.redirectConfiguration = .disallow
        c.decompression = .disabled
        c.httpVersion = .http1Only
        // One connection per segment: room for `perHostConnections` segments to one host at once (the
        // engine keeps jobs × segments within it), so no request waits in the pool.
        c.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: perHostConnections)
        let ms = Int64(noProgressTimeout.secondsDouble * 1000)
        c.timeout = .init(connect: .seconds(15), read: .milliseconds(max(ms, 100)))
        c.http1_1ConnectionDebugInitializer = { channel in
            channel.setOption(
                ChannelOptions.recvAllocator,
                value: AdaptiveRecvByteBufferAllocator(minimum: 64 * 1024, initial: receiveAllocation, maximum: receiveAllocation)
            )
        }
        return c
    }

    /// The process-wide client used when none is passed to `Download`. Never shut down.
    public static let shared = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration())
}
