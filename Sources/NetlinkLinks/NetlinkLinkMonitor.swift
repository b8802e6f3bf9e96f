import BlockingIO
import CNetlink
import Foundation
import Links
import Logging

/// The kernel backend of `LinkMonitor`, over libnl-route-3.
///
/// It reads links, addresses and default routes once, subscribes to the link, address and route groups
/// of both families, then blocks in `poll` on the netlink socket on a dedicated thread (never on the
/// cooperative pool, never on a timer). A burst of messages is drained and coalesced into at most one
/// snapshot; a snapshot equal to the previous one is not delivered.
///
/// It scales with the routing table: only default routes are kept, from the first (streamed, filtered)
/// dump and then from route events, which are filtered while parsed — churn of other routes costs a
/// header check each. A link or address event re-reads links and addresses only (they are few), and drops
/// the default routes of a link that went down or away (the kernel removes IPv4 routes silently). Routes
/// are dumped again only after an overrun (ENOBUFS: events were lost).
///
/// Any netlink error after the first snapshot (open, subscribe, dump, poll, receive) closes the sockets,
/// waits a bounded exponential back-off and reopens them and reads everything again (`NetlinkRecovery`).
/// When that keeps failing (by default 10 failures over at least 60 s with no healthy session), the
/// stream throws a `NetlinkError` with code `.gaveUp`: a daemon must not run on without link facts, so it
/// exits non-zero and its service manager restarts it. An error before the first snapshot is thrown at
/// once (no netlink, no namespace: the caller's to see).
public struct NetlinkLinkMonitor: LinkMonitor {
    /// Enter this network namespace (a path such as `/run/netns/NAME`) on the monitor thread first.
    /// sysfs facts are not read then: sysfs shows the namespace it was mounted in.
    public var namespacePath: String?
    /// How long to keep collecting messages after the first of a burst before dumping.
    public var coalesceWindow: Duration
    public var logger: Logger
    /// The back-off between reopens and when to give up.
    public var recovery: NetlinkRecovery.Limits
    /// Failures a test injects; none by default.
    public var faults: NetlinkFaults
    /// The kernel's route lookups, in the namespace the monitor watches, while `snapshots()` is followed.
    let routes = RouteLookup()

    public init(
        namespacePath: String? = nil, coalesceWindow: Duration = .milliseconds(1),
        recovery: NetlinkRecovery.Limits = NetlinkRecovery.Limits(), faults: NetlinkFaults = .none,
        logger: Logger = Logger(label: "meterwise.netlink")
    ) {
        self.namespacePath = namespacePath
        self.coalesceWindow = coalesceWindow
        self.recovery = recovery
        self.faults = faults
        self.logger = logger
    }

    public func snapshots() -> AsyncThrowingStream<LinkSnapshot, any Error> {
        let (namespacePath, coalesceMillis) = (self.namespacePath, Int32(max(0, coalesceWindow.milliseconds)))
        let (recovery, faults, logger, routes) = (self.recovery, self.faults, self.logger, self.routes)
        return PollThread.throwingStream(named: "mw-netlink", bufferingPolicy: .bufferingNewest(64)) { waiter in
            try ReceiveLoop(
                namespacePath: namespacePath, coalesceMillis: coalesceMillis, recovery: recovery,
                faults: faults, waiter: waiter, logger: logger, routes: routes
            ).run()
        }
    }

    /// The kernel's answer (`ip route get`): routes other than the default ones and policy rules included.
    public func outgoingRoute(to address: String, from source: String?) -> KernelRoute? {
        routes.outgoingRoute(to: address, from: source)
    }
}

extension Duration {
    var milliseconds: Int64 {
        let (s, a) = components
        return s * 1000 + a / 1_000_000_000_000_000
    }
}

/// The body of the monitor thread. Owns its sockets from start to end.
final class ReceiveLoop {
    let namespacePath: String?
    let coalesceMillis: Int32
    let waiter: PollWaiter<LinkSnapshot>
    let logger: Logger
    let limits: NetlinkRecovery.Limits
    let faults: NetlinkFaults
    let routes: RouteLookup
    /// The last snapshot delivered and its number; kept across reconnects.
    var sequence: UInt64 = 0
    var last: LinkSnapshot?

    init(
        namespacePath: String?, coalesceMillis: Int32, recovery: NetlinkRecovery.Limits, faults: NetlinkFaults,
        waiter: PollWaiter<LinkSnapshot>, logger: Logger, routes: RouteLookup
    ) {
        self.routes = routes
        self.namespacePath = namespacePath
        self.limits = recovery
        self.faults = faults
        self.coalesceMillis = coalesceMillis
        self.waiter = waiter
        self.logger = logger
    }

    /// Returns when the consumer goes away; throws when netlink fails before the first snapshot, or for good.
    func run() throws(NetlinkError) {
        let origin = ContinuousClock.now
        var recovery = NetlinkRecovery(limits: limits)
        var started = false
        while true {
            do {
                try loop(started: &started) { recovery.opened(at: ContinuousClock.now - origin) }
                return
            } catch {
                // Before the first snapshot an error is the caller's to see (no namespace, no netlink).
                guard started else { throw error }
                switch recovery.failed(at: ContinuousClock.now - origin) {
                case let .giveUp(failures, over):
                    let message =
                        "netlink failed \(failures) times in a row over \(Int(over.seconds)) s, reopening "
                        + "after each (last: \(error)); giving up on link monitoring, so that a daemon exits and its "
                        + "service manager restarts it"
                    logger.error("\(message)")
                    throw NetlinkError(.gaveUp, message)
                case let .reopen(delay):
                    logger.warning(
                        "netlink: \(error); reopening and reading every link again in \(delay) (failure \(recovery.failures) in a row)"
                    )
                    if waiter.sleep(for: max(.milliseconds(1), delay)) { return }
                }
            }
        }
    }

    /// Throws the fault a test injected at `point`, if any.
    private func check(_ point: NetlinkFaults.Point) throws(NetlinkError) {
        if let error = faults.fault(point) { throw error }
    }

    /// Opens the sockets, reads everything, then follows events until the consumer goes away (returns)
    /// or netlink fails (throws).
    private func loop(started: inout Bool, opened: () -> Void) throws(NetlinkError) {
        if let namespacePath { try enterNamespace(namespacePath) }
        try check(.open)
        routes.open()
        defer { routes.close() }
        guard let events = nl_socket_alloc(), let requests = nl_socket_alloc(), let routeRequests = nl_socket_alloc()
        else {
            throw NetlinkError(.socket, "cannot allocate a netlink socket (out of memory?)")
        }
        defer {
            nl_socket_free(events)
            nl_socket_free(requests)
            nl_socket_free(routeRequests)
        }
        nl_socket_disable_seq_check(events)
        var result = nl_connect(events, NETLINK_ROUTE)
        guard result == 0 else { throw .libnl(.socket, "connecting the netlink event socket", result) }
        _ = nl_socket_set_buffer_size(events, 4 << 20, 0)
        result = mw_subscribe_all(events)
        guard result == 0 else { throw .libnl(.subscribe, "subscribing to link/address/route events", result) }
        _ = nl_socket_set_nonblocking(events)
        for socket in [requests, routeRequests] {
            result = nl_connect(socket, NETLINK_ROUTE)
            guard result == 0 else { throw .libnl(.socket, "connecting the netlink request socket", result) }
        }
        _ = nl_socket_set_buffer_size(routeRequests, 1 << 20, 0)

        let dump = NetlinkDump(readSysfs: namespacePath == nil)
        let start = ContinuousClock.now
        try check(.dump)
        var links = try dump.readLinks(requests)
        var routes = try dump.readDefaultRoutes(routeRequests)

        func publish() {
            let names = Dictionary(links.map { ($0.index, $0.name) }, uniquingKeysWith: { first, _ in first })
            let snapshot = LinkSnapshot(
                links: links, defaultRoutes: routes.map { $0.defaultRoute(names: names) }, sequence: sequence + 1,
                timestamp: (ContinuousClock.now - start).seconds)
            if let last, last.sameState(as: snapshot) { return }
            sequence += 1
            last = snapshot
            waiter.yield(snapshot)
        }

        publish()
        started = true
        opened()
        let sink = RouteSink(capacity: 4096)
        defer { sink.free() }
        let eventFD = nl_socket_get_fd(events)
        while true {
            let wake: PollWake
            do {
                wake = try waiter.wait(for: [PollDescriptor(eventFD)])
            } catch {
                throw NetlinkError(.socket, "poll on the netlink socket failed: \(error)")
            }
            guard case .ready = wake else { return }
            try check(.receive)
            // Coalesce: drain the burst, give stragglers a moment, drain again, then act once.
            sink.reset()
            var overrun = false
            var quiet = [pollfd(fd: eventFD, events: Int16(POLLIN), revents: 0)]
            repeat {
                let read = mw_read_events(eventFD, &sink.raw)
                if read == -ENOBUFS {
                    overrun = true
                } else if read < 0 {
                    throw NetlinkError(.socket, "reading netlink events failed: \(String(cString: strerror(-read)))")
                }
                quiet[0].revents = 0
            } while poll(&quiet, 1, coalesceMillis) > 0
            if overrun || sink.raw.full != 0 {
                logger.debug("netlink events were lost (overrun); reading links and routes again")
                try check(.dump)
                links = try dump.readLinks(requests)
                routes = try dump.readDefaultRoutes(routeRequests)
            } else {
                for change in sink.changes {
                    switch change {
                    case .added(let route): routes.insert(route)
                    case .removed(let route): routes.remove(route)
                    // The kernel drops the IPv4 routes of a link that goes down or away without a word; a
                    // link back up in the same burst keeps only the routes added after it came back.
                    case .linkDown(let index): routes = routes.filter { $0.linkIndex != index }
                    }
                }
                if sink.raw.links_changed != 0 { links = try dump.readLinks(requests) }
            }
            publish()
        }
    }

    private func enterNamespace(_ path: String) throws(NetlinkError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw NetlinkError(.namespace, "cannot open network namespace \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        guard mw_enter_netns(fd) == 0 else {
            throw NetlinkError(
                .namespace, "cannot enter network namespace \(path): \(String(cString: strerror(errno))) (root needed)")
        }
    }
}
