import NIOCore
import NIOEmbedded
import NIOSSL
import Testing

@testable import Transfer

/// `PlaintextCompaction`: over TLS a connection reads once per turn and each turn's plaintext goes on in a
/// buffer of its own size, so a body part waiting in a queue holds only its own bytes; a plain connection is
/// left as it is.
@Suite struct PlaintextCompactionTests {
    @Test func aTLSConnectionGetsTheCompactionAndOneReadPerTurn() throws {
        let channel = EmbeddedChannel()
        let context = try NIOSSLContext(configuration: .makeClientConfiguration())
        try channel.pipeline.syncOperations.addHandler(
            try NIOSSLClientHandler(context: context, serverHostname: "example.test"))
        try PlaintextCompaction.install(on: channel).wait()
        #expect((try? channel.pipeline.syncOperations.handler(type: PlaintextCompaction.self)) != nil)
        #expect(try channel.getOption(ChannelOptions.maxMessagesPerRead).wait() == 1)

        let plain = EmbeddedChannel()
        try PlaintextCompaction.install(on: plain).wait()
        #expect((try? plain.pipeline.syncOperations.handler(type: PlaintextCompaction.self)) == nil)
    }

    @Test func aPartHoldsOnlyItsOwnBytes() throws {
        let channel = EmbeddedChannel(handler: PlaintextCompaction())
        var turn = channel.allocator.buffer(capacity: 1 << 20)
        for i in 0..<(300 << 10) { turn.writeInteger(UInt8(truncatingIfNeeded: i)) }
        let part = try #require(turn.getSlice(at: 1000, length: 100 << 10))
        try channel.writeInbound(part)
        let out = try #require(try channel.readInbound(as: ByteBuffer.self))
        #expect(out == part)
        #expect(part.storageCapacity >= 1 << 20)
        #expect(out.storageCapacity < 200 << 10, "\(out.storageCapacity)")
        _ = try channel.finish()
    }
}
