import NIOCore
import NIOSSL

/// Over TLS, each event-loop turn's plaintext goes on in a buffer of its own size, and a turn reads once.
///
/// NIOSSL decrypts a turn's reads (four 128 KiB reads by default) into one buffer that grows to 1 MiB for
/// 512 KiB of data, and hands that buffer on. The HTTP decoder's body parts are slices of it, so each part
/// waiting in the client's queue, in a segment's loop or in the writer's queue kept a whole 1 MiB buffer
/// alive, and NIOSSL made a new one each turn: a 1 GiB download over four TLS connections peaked at 16–18 MiB
/// of anonymous memory, against 9 MiB over plain HTTP. With one 128 KiB read per turn and the plaintext
/// copied out, NIOSSL keeps reusing one 256 KiB buffer per connection and a part holds only its bytes:
/// 9.3 MiB, at the same CPU (the copy costs about what the buffers that are no longer made did; bench/README.md,
/// "download").
final class PlaintextCompaction: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = Self.unwrapInboundIn(data)
        var own = context.channel.allocator.buffer(capacity: buffer.readableBytes)
        own.writeBuffer(&buffer)
        context.fireChannelRead(Self.wrapInboundOut(own))
    }

    /// On a TLS connection (a client TLS handler in its pipeline): adds the compaction right after that
    /// handler and reads once per turn. Nothing on a plain connection, whose parts are slices of
    /// right-sized receive buffers already. Call on the channel's event loop.
    static func install(on channel: any Channel) -> EventLoopFuture<Void> {
        let pipeline = channel.pipeline.syncOperations
        guard let tls = try? pipeline.handler(type: NIOSSLClientHandler.self) else {
            return channel.eventLoop.makeSucceededVoidFuture()
        }
        do {
            try pipeline.addHandler(PlaintextCompaction(), position: .after(tls))
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return channel.setOption(ChannelOptions.maxMessagesPerRead, value: 1)
    }
}
