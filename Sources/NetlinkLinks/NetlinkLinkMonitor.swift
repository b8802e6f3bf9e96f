import CNetlink
import Foundation
import Links
import Logging
import Synchronization

/// The kernel backend of `LinkMonitor`, over libnl-route-3.
///
/// It dumps links, addresses and routes once, subscribes to the link, address and route groups of
/// both families, then blocks in `poll` on the netlink socket on a dedicated thread (never on the
/// cooperative pool, never on a timer). A burst of messages is drained and coalesced into one dump
/// and at most one snapshot; a snapshot equal to the previous one is not delivered. An overrun
/// (ENOBUFS) just means "dump again", which every burst does anyway.
public struct NetlinkLinkMonitor: LinkMonitor {
    /// Enter this network namespace (a path such as `/run/netns/NAME`) on the monitor thread first.
    /// sysfs facts are not read then: sysfs shows the namespace it was mounted in.
    public var namespacePath: String?
    /// How long to keep collecting messages after the first of a burst before dumping.
    public var coalesceWindow: Duration
    public var logger: Logger

    public init(namespacePath: String? = nil, coalesceWindow: Duration = .milliseconds(1),
                logger: Logger = Logger(label: "meterwise.netlink")) {
        self.namespacePath = namespacePath
        self.coalesceWindow = coalesceWindow
        self.logger = logger
    }

    public func snapshots() -> AsyncThrowingStream<LinkSnapshot, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: LinkSnapshot.self, bufferingPolicy: .bufferingNewest(64))
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else {
            continuation.finish(throwing: NetlinkError(.socket, "cannot create a wake-up pipe: \(String(cString: strerror(errno)))"))
            return stream
        }
        let wakeRead = fds[0], wakeWrite = fds[1]
        continuation.onTermination = { _ in
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)
        }
        let loop = ReceiveLoop(namespacePath: namespacePath, coalesceMillis: Int32(max(0, coalesceWindow.milliseconds)),
                               wakeRead: wakeRead, wakeWrite: wakeWrite, continuation: continuation, logger: logger)
        let thread = Thread { loop.run() }
        thread.name = "meterwise-netlink"
        thread.start()
        return stream
    }
}

extension Duration {
    var milliseconds: Int64 {
        let (s, a) = components
        return s * 1000 + a / 1_000_000_000_000_000
    }
}

/// The body of the monitor thread. Owns its sockets from start to end.
final class ReceiveLoop: Sendable {
    let namespacePath: String?
    let coalesceMillis: Int32
    let wakeRead: Int32
    let wakeWrite: Int32
    let continuation: AsyncThrowingStream<LinkSnapshot, any Error>.Continuation
    let logger: Logger

    init(namespacePath: String?, coalesceMillis: Int32, wakeRead: Int32, wakeWrite: Int32,
         continuation: AsyncThrowingStream<LinkSnapshot, any Error>.Continuation, logger: Logger) {
        self.namespacePath = namespacePath
        self.coalesceMillis = coalesceMillis
        self.wakeRead = wakeRead
        self.wakeWrite = wakeWrite
        self.continuation = continuation
        self.logger = logger
    }

    func run() {
        defer {
            close(wakeRead)
            close(wakeWrite)
        }
        do {
            try loop()
            continuation.finish()
        } catch {
            continuation.finish(throwing: error)
        }
    }

    private func loop() throws(NetlinkError) {
        if let namespacePath { try enterNamespace(namespacePath) }
        guard let events = nl_socket_alloc(), let requests = nl_socket_alloc() else {
            throw NetlinkError(.socket, "cannot allocate a netlink socket (out of memory?)")
        }
        defer {
            nl_socket_free(events)
            nl_socket_free(requests)
        }
        nl_socket_disable_seq_check(events)
        var result = nl_connect(events, NETLINK_ROUTE)
        guard result == 0 else { throw .libnl(.socket, "connecting the netlink event socket", result) }
        _ = nl_socket_set_buffer_size(events, 4 << 20, 0)
        result = mw_subscribe_all(events)
        guard result == 0 else { throw .libnl(.subscribe, "subscribing to link/address/route events", result) }
        _ = nl_socket_set_nonblocking(events)
        result = nl_connect(requests, NETLINK_ROUTE)
        guard result == 0 else { throw .libnl(.socket, "connecting the netlink request socket", result) }

        let dump = NetlinkDump(readSysfs: namespacePath == nil)
        let start = ContinuousClock.now
        var sequence: UInt64 = 0
        var last: LinkSnapshot?

        func publish() throws(NetlinkError) {
            let state = try dump.read(requests)
            let snapshot = LinkSnapshot(links: state.links, defaultRoutes: state.routes, sequence: sequence + 1,
                                        timestamp: (ContinuousClock.now - start).seconds)
            if let last, last.sameState(as: snapshot) { return }
            sequence += 1
            last = snapshot
            continuation.yield(snapshot)
        }

        try publish()
        let eventFD = nl_socket_get_fd(events)
        var fds = [pollfd(fd: eventFD, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
        while true {
            fds[0].revents = 0
            fds[1].revents = 0
            let ready = poll(&fds, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                throw NetlinkError(.socket, "poll on the netlink socket failed: \(String(cString: strerror(errno)))")
            }
            if fds[1].revents != 0 { return }
            guard fds[0].revents != 0 else { continue }
            // Coalesce: drain the burst, give stragglers a moment, drain again, then dump once.
            var overrun = mw_drain(eventFD) == -ENOBUFS
            var quiet = [pollfd(fd: eventFD, events: Int16(POLLIN), revents: 0)]
            while poll(&quiet, 1, coalesceMillis) > 0 {
                overrun = mw_drain(eventFD) == -ENOBUFS || overrun
                quiet[0].revents = 0
            }
            if overrun { logger.debug("netlink receive buffer overran; dumping again") }
            try publish()
        }
    }

    private func enterNamespace(_ path: String) throws(NetlinkError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw NetlinkError(.namespace, "cannot open network namespace \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        guard mw_enter_netns(fd) == 0 else {
            throw NetlinkError(.namespace, "cannot enter network namespace \(path): \(String(cString: strerror(errno))) (root needed)")
        }
    }
}
