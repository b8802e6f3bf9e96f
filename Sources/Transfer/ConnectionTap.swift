import CFileCalls
import NIOCore
import NIOSSL
import Synchronization

/// The connections of one download's own HTTP client, for what a pause throws away.
///
/// A paused transfer closes its connections; what their kernels received and nobody read would be
/// dropped with them — megabytes when the disk is the slow side. So a pause clamps every window
/// (`freezeWindows`), reads what the kernels hold at that moment (`PauseDrain`), and then closes: it does
/// not wait for what is still in flight, which would keep the sender going as long as its window allows,
/// on a link that may just have become metered. What is thrown away is counted: the bytes each kernel
/// received and nobody read (`tcp_info`'s `bytes_received` against what NIO read), plus what NIO read
/// that never reached the file. (Segments in flight at the close arrive afterwards and are answered with
/// a reset; no per-connection counter sees them, so bench/pause measures them from its namespace.)
final class ConnectionTap: Sendable {
    /// Counts the bytes NIO reads from one connection: from the socket (`total`, what the kernel's count is
    /// compared with), and into the tap's `read` the bytes the HTTP parser gets (headers and body). Over TLS
    /// these are two counters, one before the TLS handler and one after it, so record headers and tags are
    /// not taken for thrown-away body bytes.
    final class ReadCounter: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        typealias InboundOut = ByteBuffer
        let total: Atomic<Int64>
        private let tap: ConnectionTap?

        init(tap: ConnectionTap?) {
            self.tap = tap
            self.total = Atomic(0)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let n = Int64(unwrapInboundIn(data).readableBytes)
            total.add(n, ordering: .relaxed)
            tap?.read.add(n, ordering: .relaxed)
            context.fireChannelRead(data)
        }
    }

    /// The window a pausing connection still offers beyond the right edge it advertised (the kernel's floor
    /// is about 2 KiB).
    static let pausedWindow = 4096
    /// TCP_WINDOW_CLAMP (linux/tcp.h).
    static let windowClamp = NIOBSDSocket.Option(rawValue: 10)

    private let channels = Mutex<[ObjectIdentifier: (channel: any Channel, counter: ReadCounter)]>([:])
    /// Every byte NIO read from any connection of this client.
    let read = Atomic<Int64>(0)

    /// Called by the client for each new HTTP/1.1 connection: counts its reads, forgets it when it closes.
    func register(_ channel: any Channel) -> EventLoopFuture<Void> {
        let key = ObjectIdentifier(channel)
        channel.closeFuture.whenComplete { [self] _ in _ = channels.withLock { $0.removeValue(forKey: key) } }
        return channel.eventLoop.submit { [self] in
            let pipeline = channel.pipeline.syncOperations
            if let tls = try? pipeline.handler(type: NIOSSLClientHandler.self) {
                // TLS: the socket's bytes before the TLS handler, the HTTP parser's after it.
                let socket = ReadCounter(tap: nil)
                channels.withLock { $0[key] = (channel, socket) }
                try pipeline.addHandler(socket, position: .first)
                try pipeline.addHandler(ReadCounter(tap: self), position: .after(tls))
            } else {
                let counter = ReadCounter(tap: self)
                channels.withLock { $0[key] = (channel, counter) }
                try pipeline.addHandler(counter, position: .first)
            }
        }
    }

    /// Clamps every open connection's advertised window (TCP_WINDOW_CLAMP): Linux never moves back a right
    /// edge it advertised, and offers nothing beyond it but `pausedWindow`, so reading what the kernel holds
    /// does not invite more. (Shrinking SO_RCVBUF instead makes the kernel drop data already in flight.)
    func freezeWindows() {
        let clamp = ChannelOptions.Types.SocketOption(level: .tcp, name: Self.windowClamp)
        for (channel, _) in channels.withLock({ Array($0.values) }) {
            _ = channel.setOption(clamp, value: SocketOptionValue(Self.pausedWindow))
        }
    }

    /// What the kernel says of one open connection: bytes received in order (read or not), and how many
    /// of them NIO read.
    struct Reading {
        var received: Int64
        var read: Int64
    }

    /// The kernel's view of every open connection; connections it says nothing of (not TCP, a kernel before
    /// 4.1) are left out.
    func readings() async -> [Reading] {
        var out: [Reading] = []
        for (channel, counter) in channels.withLock({ Array($0.values) }) {
            guard let provider = channel as? any SocketOptionProvider else { continue }
            let info: mw_tcp_info
            do {
                info = try await provider.unsafeGetSocketOption(level: .tcp, name: .tcp_info).get()
            } catch {
                continue
            }
            let length = UInt32(MemoryLayout<mw_tcp_info>.size)
            let received = withUnsafePointer(to: info) { Int64(clamping: mw_tcp_bytes_received($0, length)) }
            guard received > 0 else { continue }
            out.append(Reading(received: received, read: counter.total.load(ordering: .relaxed)))
        }
        return out
    }

    /// Bytes the kernels of the open connections received that were not read (yet): dropped if they
    /// close now.
    func unreadBytes() async -> Int64 {
        await readings().reduce(0) { $0 + max(0, $1.received - $1.read) }
    }
}
