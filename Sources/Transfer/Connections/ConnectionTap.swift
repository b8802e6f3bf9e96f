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
        /// What the connection had read at the last turn (for what it received in a turn).
        var turnRead: Int64 = 0
        /// The kernel's receiver round trip at the last turn: one that has not moved had no new sample.
        var turnRTT: UInt32 = 0
    }

    /// The background mode's window controller, shared by the connections, and how many of them may have a
    /// request out (nil in the foreground).
    private let background = Mutex<(controller: BackgroundWindow, connections: Int)?>(nil)

    /// The background controller's figures now; nil in the foreground or before its first sample.
    var backgroundState: BackgroundState? {
        background.withLock { mode in
            mode.flatMap { $0.controller.base == nil ? nil : $0.controller.state(connections: $0.connections) }
        }
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
    /// little in flight; in `background` mode, to its share of the window the queuing delay allows
    /// (`BackgroundWindow`) when that is less. Called every `WindowGovernor.period`. A window a pause froze is
    /// left as it is: the check and the clamp run on the connection's event loop, where `freezeWindows`'
    /// clamp comes after.
    /// Returns how many connections background mode lets have a request out; nil for no limit.
    @discardableResult
    func governWindows(background wanted: Bool = false, target: Duration = BackgroundWindow.defaultTarget) async
        -> Int?
    {
        let open = channels.withLock { table in
            table.filter { !$0.value.frozen }.map { (key: $0.key, channel: $0.value.channel) }
        }
        struct Turn {
            var key: ObjectIdentifier
            var channel: any Channel
            var window: Int?
            var delivered: Int64
            var receiverRTT: UInt32
            var minRTT: UInt32
        }
        var turns: [Turn] = []
        var segment = 0
        for (key, channel) in open {
            guard let provider = channel as? any SocketOptionProvider,
                let info: mw_tcp_info = try? await provider.unsafeGetSocketOption(level: .tcp, name: .tcp_info).get()
            else { continue }
            let length = UInt32(MemoryLayout<mw_tcp_info>.size)
            let micros = withUnsafePointer(to: info) { mw_tcp_min_rtt($0, length) }
            let mss = withUnsafePointer(to: info) { Int(mw_tcp_advmss($0, length)) }
            let receiverRTT = withUnsafePointer(to: info) { mw_tcp_rcv_rtt($0, length) }
            segment = max(segment, mss)
            let now = ContinuousClock.now
            let turn: Turn? = channels.withLock { table in
                guard var entry = table[key], !entry.frozen else { return nil }
                let read = entry.counter.total.load(ordering: .relaxed)
                let window = entry.governor.window(
                    read: read, at: now, minRTT: micros > 0 ? .microseconds(micros) : nil, segment: mss,
                    connections: open.count)
                let delivered = max(0, read - entry.turnRead)
                // A value that has not moved had no sample: the kernel takes none below its 1 ms clock step,
                // and no higher one while data waits unread. It is stale, not current.
                let fresh = receiverRTT != entry.turnRTT ? receiverRTT : 0
                entry.turnRead = read
                entry.turnRTT = receiverRTT
                table[key] = entry
                return Turn(
                    key: key, channel: channel, window: window, delivered: delivered, receiverRTT: fresh,
                    minRTT: micros)
            }
            if let turn { turns.append(turn) }
        }
        let background = backgroundShare(
            turns.map { ($0.delivered, $0.receiverRTT, $0.minRTT) }, segment: segment, wanted: wanted,
            target: target)
        if let share = background?.share ?? nil {
            for index in turns.indices { turns[index].window = min(turns[index].window ?? share, share) }
        }
        for turn in turns {
            guard let window = turn.window else { continue }
            let (key, channel) = (turn.key, turn.channel)
            channel.eventLoop.execute { [self] in
                guard channels.withLock({ $0[key].map { !$0.frozen } ?? false }) else { return }
                _ = channel.setOption(Self.clampOption, value: SocketOptionValue(clamping: window))
            }
        }
        return background?.connections
    }

    /// The least window one connection is given in background mode: two of the peer's segments (so the
    /// sender never waits on a window smaller than one), and no less than the kernel's own floor.
    static func backgroundFloor(segment: Int) -> Int { max(kernelFloor, 2 * BackgroundWindow.segmentSize(segment)) }
    /// The kernel raises a smaller TCP_WINDOW_CLAMP to this (SOCK_MIN_RCVBUF / 2).
    static let kernelFloor = 2304

    /// Feeds one turn to the background controller (made when the mode is turned on, dropped when it is
    /// turned off) and returns each connection's share of its window and how many connections share it; nil
    /// in the foreground, or while there is no sample yet. The round trip is the lowest new receiver estimate
    /// among the connections: they share the bottleneck.
    private func backgroundShare(
        _ turns: [(delivered: Int64, receiverRTT: UInt32, minRTT: UInt32)], segment: Int, wanted: Bool,
        target: Duration
    ) -> (share: Int?, connections: Int)? {
        background.withLock { mode -> (share: Int?, connections: Int)? in
            guard wanted else {
                mode = nil
                return nil
            }
            let now = ContinuousClock.now
            if mode == nil || mode?.controller.target != target {
                mode = (BackgroundWindow(at: now, segment: segment, target: target), Int.max)
            }
            guard !turns.isEmpty, var (controller, _) = mode else {
                return (nil, BackgroundWindow.startingConnections)
            }
            let fresh = turns.filter { $0.delivered > 0 && $0.receiverRTT > 0 }.map(\.receiverRTT)
            let delivered = turns.reduce(Int64(0)) { $0 + $1.delivered }
            let least = Self.backgroundFloor(segment: segment)
            let total = controller.update(
                roundTrip: fresh.min().map { .microseconds($0) },
                pathMinimum: turns.map(\.minRTT).filter { $0 > 0 }.min().map { .microseconds($0) },
                delivered: delivered, segment: segment, floor: least, at: now)
            guard let total else {
                // No sample yet: the windows are the foreground's, but no more requests go out than the
                // starting window holds floors (16 segments' first requests would otherwise all be out).
                let connections = BackgroundWindow.connections(for: controller.window, least: least, open: .max)
                mode = (controller, connections)
                return (nil, connections)
            }
            // Not capped by the connections open now: segments waiting for their turn open none.
            let connections =
                controller.isHolding(at: now)
                ? 0 : BackgroundWindow.connections(for: total, least: least, open: .max)
            // Shown: no more than are open.
            mode = (controller, min(connections, turns.count))
            return (max(least, total / max(1, min(connections, turns.count))), connections)
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
