import NIOCore
import NIOHTTP1

/// One connection of the range server: reads a request, asks the server for a plan, streams the body
/// 64 KiB at a time while the channel is writable (throttled or cut short when a fault says so).
final class RangeHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let box: ServerBox
    var head: HTTPRequestHead?
    var stream: ResponsePlan?
    var sent: Int64 = 0
    var keepAlive = true
    var scheduled = false
    var started = NIODeadline.now()
    /// When the response in progress reached its stall (`ResponsePlan.stall`).
    var stalledAt: NIODeadline?
    /// Requests answered on this connection.
    var answered = 0

    init(box: ServerBox) { self.box = box }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h):
            head = h
        case .body:
            break
        case .end:
            guard let h = head, let server = box.server.withLock({ $0 }) else { return }
            head = nil
            if answered > 0, server.closesKeptAlive() {
                context.close(promise: nil)
                return
            }
            answered += 1
            keepAlive = h.isKeepAlive
            let request = ResponsePlan.Request(
                method: h.method == .HEAD ? "HEAD" : "GET",
                path: String(h.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]),
                range: h.headers.first(name: "Range"),
                ifMatch: h.headers.first(name: "If-Match"),
                ifRange: h.headers.first(name: "If-Range"),
                ifUnmodifiedSince: h.headers.first(name: "If-Unmodified-Since")
            )
            let plan = server.plan(request)
            var headers = HTTPHeaders()
            for (name, value) in plan.headers { headers.add(name: name, value: value) }
            if server.mutes, let content = plan.content, plan.end == content.size, plan.end > plan.start {
                keepAlive = false
            }
            if !keepAlive { headers.add(name: "Connection", value: "close") }
            let status = HTTPResponseStatus(statusCode: plan.status)
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: h.version, status: status, headers: headers))),
                promise: nil)
            stream = plan
            sent = 0
            started = .now()
            stalledAt = nil
            if server.mutes { _ = context.channel.setOption(ChannelOptions.autoRead, value: false) }
            pump(context: context)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { pump(context: context) }
        context.fireChannelWritabilityChanged()
    }

    func channelActive(context: ChannelHandlerContext) {
        box.server.withLock { $0 }?.connection(opened: true)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        box.server.withLock { $0 }?.connection(opened: false)
        stream = nil
        context.fireChannelInactive()
    }

    func pump(context: ChannelHandlerContext) {
        guard let plan = stream, let server = box.server.withLock({ $0 }) else { return }
        // Throttled: what the rate allows since the response began, minus what was sent.
        var budget = Int64.max
        if let bps = plan.throttle {
            let elapsed = Double((NIODeadline.now() - started).nanoseconds) / 1e9
            budget = max(0, plan.burst + Int64(Double(bps) * elapsed) + Int64(bps / 50) - sent)
        }
        if let stall = plan.stall, sent >= stall.after {
            let at = stalledAt ?? .now()
            stalledAt = at
            if NIODeadline.now() - at < .nanoseconds(Int64(stall.seconds * 1e9)) { budget = 0 }
        }
        var position = plan.start + sent
        var abort = false
        while context.channel.isWritable, position < plan.end, budget > 0, let content = plan.content {
            var n = min(64 * 1024, plan.end - position, budget)
            if let stall = plan.stall, sent < stall.after {
                n = min(n, stall.after - sent)
            } else if plan.stall != nil, stalledAt == nil {
                break  // the stall begins at the next turn
            }
            if let cut = plan.cutAfter {
                n = min(n, cut - sent)
                if n <= 0 {
                    abort = true
                    break
                }
            }
            let (allowed, replaced) = server.willSend(n, index: plan.index)
            if allowed > 0 {
                var buffer = context.channel.allocator.buffer(capacity: Int(allowed))
                content.write(offset: position, count: Int(allowed), into: &buffer)
                if let spoiled = plan.corrupt {
                    let from = max(spoiled.lowerBound, position)
                    let to = min(spoiled.upperBound, position + allowed)
                    if from < to {
                        buffer.withUnsafeMutableReadableBytes { bytes in
                            for i in Int(from - position)..<Int(to - position) { bytes[i] ^= 0x5a }
                        }
                    }
                }
                context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
                sent += allowed
                position += allowed
                budget -= allowed
            }
            if replaced {
                abort = true
                break
            }
        }
        if !abort, let cut = plan.cutAfter, sent >= cut, position < plan.end { abort = true }
        if abort {
            stream = nil
            let reset = plan.reset
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer()))), promise: nil)
            if reset, let provider = context.channel as? any SocketOptionProvider {
                let channel = context.channel
                provider.setSoLinger(NIOLinger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil)
                }
            } else {
                context.close(promise: nil)
            }
            return
        }
        if position >= plan.end {
            stream = nil
            let final = plan.content.map { plan.end == $0.size && plan.end > plan.start } ?? false
            let mute = final && server.mutes
            let keep = keepAlive || mute
            // A mute server reads again between responses (keep-alive), never after the object's end.
            if server.mutes, !mute { _ = context.channel.setOption(ChannelOptions.autoRead, value: true) }
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { [channel = context.channel] _ in
                server.responseSent(on: channel, mute: mute)
                if !keep { channel.close(promise: nil) }
            }
            return
        }
        context.flush()
        if plan.throttle != nil || plan.stall != nil, !scheduled {
            scheduled = true
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: .milliseconds(20)) {
                let (handler, context) = loopBound.value
                handler.scheduled = false
                handler.pump(context: context)
            }
        }
    }
}
