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

    /// One open connection: its reads, its window's governor, and whether a pause froze its window.
    struct Tapped: Sendable {
        var channel: any Channel
        var counter: ReadCounter
        var governor: WindowGovernor
        var frozen = false
    }

    private let channels = Mutex<[ObjectIdentifier: Tapped]>([:])
    /// Every byte NIO read from any connection of this client.
    let read = Atomic<Int64>(0)

    /// Called by the client for each new connection: counts its reads, forgets it when it closes. An HTTP/2
    /// connection's bytes after TLS are frames of several streams, not one response's head and body: they
    /// are left out of `read` (its body bytes are counted where the segments read them).
    func register(_ channel: any Channel, http2: Bool = false) -> EventLoopFuture<Void> {
        let key = ObjectIdentifier(channel)
        channel.closeFuture.whenComplete { [self] _ in _ = channels.withLock { $0.removeValue(forKey: key) } }
        return channel.eventLoop.submit { [self] in
            clampFromTheStart(channel, key: key)
            let pipeline = channel.pipeline.syncOperations
            if let tls = try? pipeline.handler(type: NIOSSLClientHandler.self) {
                // TLS: the socket's bytes before the TLS handler, the HTTP parser's after it.
                let socket = ReadCounter(tap: nil)
                channels.withLock {
                    $0[key] = Tapped(channel: channel, counter: socket, governor: WindowGovernor(at: .now))
                }
                try pipeline.addHandler(socket, position: .first)
                if !http2 { try pipeline.addHandler(ReadCounter(tap: self), position: .after(tls)) }
            } else {
                let counter = ReadCounter(tap: self)
                channels.withLock {
                    $0[key] = Tapped(channel: channel, counter: counter, governor: WindowGovernor(at: .now))
                }
                try pipeline.addHandler(counter, position: .first)
            }
        }
    }

    /// Clamps every open connection's advertised window (TCP_WINDOW_CLAMP): Linux never moves back a right
    /// edge it advertised, and offers nothing beyond it but `pausedWindow`, so reading what the kernel holds
    /// does not invite more. (Shrinking SO_RCVBUF instead makes the kernel drop data already in flight.)
    func freezeWindows() {
        let frozen = channels.withLock { table in
            for key in table.keys { table[key]?.frozen = true }
            return table.values.map(\.channel)
        }
        for channel in frozen {
            _ = channel.setOption(Self.clampOption, value: SocketOptionValue(Self.pausedWindow))
        }
    }

    static let clampOption = ChannelOptions.Types.SocketOption(level: .tcp, name: windowClamp)

    /// Clamps each running connection's window to what its rate needs (`WindowGovernor`), so a pause finds
    /// little in flight; called every `WindowGovernor.period`. A window a pause froze is left as it is: the check and
    /// the clamp run on the connection's event loop, where `freezeWindows`' clamp comes after.
    func governWindows() async {
        let open = channels.withLock { table in
            table.filter { !$0.value.frozen }.map { (key: $0.key, channel: $0.value.channel) }
        }
        for (key, channel) in open {
            guard let provider = channel as? any SocketOptionProvider,
                let info: mw_tcp_info = try? await provider.unsafeGetSocketOption(level: .tcp, name: .tcp_info).get()
            else { continue }
            let length = UInt32(MemoryLayout<mw_tcp_info>.size)
            let micros = withUnsafePointer(to: info) { mw_tcp_min_rtt($0, length) }
            let segment = withUnsafePointer(to: info) { Int(mw_tcp_advmss($0, length)) }
            let now = ContinuousClock.now
            let window: Int? = channels.withLock { table in
                guard var entry = table[key], !entry.frozen else { return nil }
                let window = entry.governor.window(
                    read: entry.counter.total.load(ordering: .relaxed), at: now,
                    minRTT: micros > 0 ? .microseconds(micros) : nil, segment: segment,
                    connections: open.count)
                table[key] = entry
                return window
            }
            guard let window else { continue }
            channel.eventLoop.execute { [self] in
                guard channels.withLock({ $0[key].map { !$0.frozen } ?? false }) else { return }
                _ = channel.setOption(Self.clampOption, value: SocketOptionValue(clamping: window))
            }
        }
    }

    /// A new connection's window before its first turn of `governWindows`: the kernel's autotuning would
    /// grow it meanwhile, and a pause in those first milliseconds would throw that away.
    private func clampFromTheStart(_ channel: any Channel, key: ObjectIdentifier) {
        guard let provider = channel as? any SocketOptionProvider else { return }
        let others = channels.withLock { $0.count }
        provider.unsafeGetSocketOption(level: .tcp, name: .tcp_info).whenSuccess { [self] (info: mw_tcp_info) in
            let segment = withUnsafePointer(to: info) { Int(mw_tcp_advmss($0, UInt32(MemoryLayout<mw_tcp_info>.size))) }
            let window = WindowGovernor.least(segment: segment, connections: others + 1)
            guard channels.withLock({ $0[key].map { !$0.frozen } ?? true }) else { return }
            _ = channel.setOption(Self.clampOption, value: SocketOptionValue(clamping: window))
        }
    }

    /// The window each open connection is clamped to now (TCP_WINDOW_CLAMP), for tests.
    func windowClamps() async -> [Int] {
        var out: [Int] = []
        for channel in channels.withLock({ $0.values.map(\.channel) }) {
            if let value = try? await channel.getOption(Self.clampOption).get() { out.append(Int(value)) }
        }
        return out
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
        for (channel, counter) in channels.withLock({ $0.values.map { ($0.channel, $0.counter) } }) {
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
