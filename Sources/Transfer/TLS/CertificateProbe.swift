import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// After a certificate failed to verify, one more connection to the server, on the download's own path
/// (direct, or a CONNECT tunnel through its HTTP proxy), that reads the certificate the server presents
/// and then aborts the handshake (no request is sent), so the message can say *why*: expired, not yet
/// valid, another host's, or from an issuer this machine does not trust.
enum CertificateProbe {
    /// The facts of the server's leaf certificate, or nil when it could not be had within `timeout`.
    static func facts(host: String, port: Int, proxy: ProxyServer? = nil, timeout: TimeAmount = .seconds(5)) async
        -> CertificateFacts?
    {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = .fullVerification
        // As every connection of ours: a close never waits for the server's close_notify (TLSSettings).
        configuration.shutdownTimeout = .zero
        guard let context = try? NIOSSLContext(configuration: configuration) else { return nil }
        let found = Mutex<CertificateFacts?>(nil)
        let serverName = NoProxy.address(host) == nil ? host : nil
        // Called from the channel initializer, on the event loop: everything it captures is Sendable.
        let makeTLS: @Sendable () throws -> NIOSSLClientHandler = {
            try NIOSSLClientHandler(
                context: context, serverHostname: serverName,
                customVerificationCallback: { certificates, promise in
                    if let leaf = certificates.first { found.withLock { $0 = CertificateFacts(leaf) } }
                    promise.succeed(.failed)
                })
        }
        let target = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        do {
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(timeout)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        if let proxy {
                            let tunnel = ConnectTunnel(
                                target: target, authorization: proxy.basicAuthorization, then: makeTLS)
                            try channel.pipeline.syncOperations.addHandler(tunnel)
                        } else {
                            try channel.pipeline.syncOperations.addHandler(try makeTLS())
                        }
                    }
                }
                .connect(host: proxy?.host ?? host, port: proxy?.port ?? port)
                .get()
            let deadline = channel.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
            try? await channel.closeFuture.get()
            deadline.cancel()
        } catch {
            return found.withLock { $0 }
        }
        return found.withLock { $0 }
    }
}

/// Opens a CONNECT tunnel through an HTTP proxy, then puts the handler `then` makes in its own place.
/// Anything but a 2xx answer closes the connection.
final class ConnectTunnel: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let target: String
    let authorization: String?
    let then: () throws -> any ChannelHandler
    var head: [UInt8] = []

    init(target: String, authorization: String?, then: @escaping () throws -> any ChannelHandler) {
        self.target = target
        self.authorization = authorization
        self.then = then
    }

    func channelActive(context: ChannelHandlerContext) {
        let text = ProxyServer.connectRequest(target, authorization: authorization)
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: text)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        head += buffer.readableBytesView
        guard let end = head.firstRange(of: Array("\r\n\r\n".utf8)) else {
            if head.count > 16_384 { context.close(promise: nil) }
            return
        }
        let statusLine = String(
            decoding: head[..<(head.firstIndex(of: UInt8(ascii: "\r")) ?? end.lowerBound)], as: UTF8.self)
        let code = statusLine.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        guard (200..<300).contains(code), end.upperBound == head.count, let next = try? then() else {
            context.close(promise: nil)
            return
        }
        let pipeline = context.pipeline
        do {
            // The channel is active already, so the TLS handler starts its handshake as it is added.
            try pipeline.syncOperations.addHandler(next, position: .after(self))
            pipeline.syncOperations.removeHandler(self, promise: nil)
        } catch {
            context.close(promise: nil)
        }
    }
}

extension ProxyServer {
    /// The CONNECT request for a tunnel to `target` (`host:port`), with `Proxy-Authorization` when given.
    static func connectRequest(_ target: String, authorization: String?) -> String {
        var text = "CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n"
        if let authorization { text += "Proxy-Authorization: Basic \(authorization)\r\n" }
        return text + "\r\n"
    }

    /// `user:password` in base64 for `Proxy-Authorization: Basic`, when the proxy URL has credentials.
    var basicAuthorization: String? {
        guard let username else { return nil }
        return Data("\(username):\(password ?? "")".utf8).base64EncodedString()
    }
}
