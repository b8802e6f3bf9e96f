import NIOCore
import NIOPosix
import Synchronization

/// What an HTTP proxy answered: its status line and the header that names its reason. Pure parsing; the
/// probe that asks is `ProxyAnswer.toConnect`.
struct ProxyAnswer: Sendable, Equatable {
    /// The status code (403).
    var status: Int
    /// The reason phrase as the proxy sent it ("Forbidden").
    var reason: String
    /// squid's `X-Squid-Error` (`ERR_ACCESS_DENIED 0`) or the `Proxy-Status` header, when sent.
    var detail: String?

    init(status: Int, reason: String, detail: String?) {
        self.status = status
        self.reason = reason
        self.detail = detail
    }

    /// Reads a response head (status line and headers, up to the blank line); nil when it is not one.
    init?(head text: String) {
        let lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
        guard let first = lines.first, first.hasPrefix("HTTP/") else { return nil }
        let parts = first.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
        guard parts.count >= 2, parts[1].count == 3, let code = Int(parts[1]), (100...599).contains(code) else {
            return nil
        }
        status = code
        reason = parts.count > 2 ? String(parts[2].prefix(80)) : ""
        detail = nil
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            if name == "x-squid-error" || name == "proxy-status" {
                detail = String(String(line[line.index(after: colon)...]).trimmingSpacesT.prefix(120))
                break
            }
        }
    }

    /// "403 Forbidden (ERR_ACCESS_DENIED 0)".
    var shown: String {
        "\(status)\(reason.isEmpty ? "" : " " + reason)\(detail.map { " (\($0))" } ?? "")"
    }

    /// Asks `proxy` for a CONNECT tunnel to `target` (`host:port`) and returns its answer, then closes; nil
    /// when no answer came within `timeout`. Used after the HTTP client saw a refused tunnel, to say which
    /// status the proxy gave and why.
    static func toConnect(_ target: String, proxy: ProxyServer, timeout: TimeAmount = .seconds(5)) async
        -> ProxyAnswer?
    {
        let found = Mutex<ProxyAnswer?>(nil)
        do {
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(timeout)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            HeadReader(target: target, authorization: proxy.basicAuthorization) { answer in
                                found.withLock { $0 = answer }
                            })
                    }
                }
                .connect(host: proxy.host, port: proxy.port)
                .get()
            let deadline = channel.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
            try? await channel.closeFuture.get()
            deadline.cancel()
        } catch {
            return nil
        }
        return found.withLock { $0 }
    }

    /// Sends the CONNECT, reads the head, reports it and closes.
    final class HeadReader: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let target: String
        let authorization: String?
        let report: @Sendable (ProxyAnswer?) -> Void
        var head: [UInt8] = []

        init(target: String, authorization: String?, report: @escaping @Sendable (ProxyAnswer?) -> Void) {
            self.target = target
            self.authorization = authorization
            self.report = report
        }

        func channelActive(context: ChannelHandlerContext) {
            let text = ProxyServer.connectRequest(target, authorization: authorization)
            context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: text)), promise: nil)
            context.fireChannelActive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            head += unwrapInboundIn(data).readableBytesView
            if let end = head.firstRange(of: Array("\r\n\r\n".utf8)) {
                report(ProxyAnswer(head: String(decoding: head[..<end.lowerBound], as: UTF8.self)))
                context.close(promise: nil)
            } else if head.count > 16_384 {
                // An oversized head still has its status line: a refusal is not lost for its size.
                let line = head.prefix { $0 != UInt8(ascii: "\r") }.prefix(200)
                report(ProxyAnswer(head: String(decoding: line, as: UTF8.self)))
                context.close(promise: nil)
            }
        }
    }
}
