import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// A small HTTP/1.1 server for byte ranges, with fault injection: the tests' peer and the demo's
/// embedded server. Serves GET and HEAD with Range (`bytes=N-`, `N-M`, `-N`), If-Match (412),
/// If-Unmodified-Since, If-Range, a strong ETag, Last-Modified and Accept-Ranges, streaming the body
/// with backpressure (never the whole object in memory).
public final class RangeServer: Sendable {
    struct State {
        var content: RangeContent
        var faults: [(fault: RangeFault, remaining: Int)]
        var requests: [ServedRequest] = []
        var bytesServed: Int64 = 0
        var openConnections = 0
        var peakConnections = 0
        /// When a response last finished sending its body (flushed to the socket).
        var lastResponseEnd: ContinuousClock.Instant?
        /// Connections a `mute` fault keeps open; closed by `shutdown()`.
        var muted: [any Channel] = []
        /// Requests met by closing their kept-alive connection (`closeKeptAlive`).
        var closedUnanswered = 0
    }

    /// The bound port (the kernel's choice when started with port 0).
    public let port: Int
    /// The bound host.
    public let host: String
    /// Whether it speaks TLS (https URLs).
    public let isTLS: Bool
    let channel: any Channel
    let state: Mutex<State>

    init(channel: any Channel, host: String, port: Int, isTLS: Bool, content: RangeContent, faults: [RangeFault]) {
        self.channel = channel
        self.host = host
        self.isTLS = isTLS
        self.port = port
        self.state = Mutex(State(content: content, faults: faults.map { ($0, Self.initialCount($0)) }))
    }

    static func initialCount(_ fault: RangeFault) -> Int {
        switch fault {
        case .earlierStart(_, let times), .truncate(_, let times), .reset(_, let times), .unavailable(_, let times),
            .rangeNotSatisfiable(let times), .closeKeptAlive(let times), .corruptRegion(_, let times):
            return times
        default:
            return Int.max
        }
    }

    /// Starts a server on `host:port` (0: any free port) serving `content`, with `faults` injected; with
    /// `tls`, it speaks https (a server configuration: certificate, key, and client verification for mTLS).
    public static func start(
        host: String = "127.0.0.1", port: Int = 0, content: RangeContent, faults: [RangeFault] = [],
        tls: TLSConfiguration? = nil
    ) async throws -> RangeServer {
        let box = ServerBox()
        let context = try tls.map { try NIOSSLContext(configuration: $0) }
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let context {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    }
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(RangeHandler(box: box))
                }
            }
            .bind(host: host, port: port)
            .get()
        let server = RangeServer(
            channel: channel, host: host, port: channel.localAddress?.port ?? port, isTLS: tls != nil, content: content,
            faults: faults
        )
        box.server.withLock { $0 = server }
        return server
    }

    /// The URL of `path` on this server.
    public func url(_ path: String = "/file") -> String {
        let h = host.contains(":") ? "[\(host)]" : host
        return "\(isTLS ? "https" : "http")://\(h):\(port)\(path)"
    }

    /// Replaces the object (its ETag changes with it).
    public func setContent(_ content: RangeContent) { state.withLock { $0.content = content } }

    /// Replaces the faults.
    public func setFaults(_ faults: [RangeFault]) {
        state.withLock { $0.faults = faults.map { ($0, Self.initialCount($0)) } }
    }

    /// The object served now.
    public var content: RangeContent { state.withLock { $0.content } }
    /// Requests answered so far.
    public var requestCount: Int { state.withLock { $0.requests.count } }
    /// Every request answered so far, with the body bytes sent for each.
    public var requests: [ServedRequest] { state.withLock { $0.requests } }
    /// Body bytes written to sockets, all requests together.
    public var bytesServed: Int64 { state.withLock { $0.bytesServed } }
    /// Requests met by closing their kept-alive connection, unanswered (`RangeFault.closeKeptAlive`).
    public var closedUnanswered: Int { state.withLock { $0.closedUnanswered } }

    /// Connections open now.
    public var openConnections: Int { state.withLock { $0.openConnections } }

    /// The most connections that were open at once since the server started: counted as they open, so a
    /// connection that lived for a moment is not missed (a test that samples `openConnections` could).
    public var peakOpenConnections: Int { state.withLock { $0.peakConnections } }

    func connection(opened: Bool) {
        state.withLock {
            $0.openConnections += opened ? 1 : -1
            $0.peakConnections = max($0.peakConnections, $0.openConnections)
        }
    }

    /// Waits (polling every 10 ms, at most `timeout`) until no connection is open: requests a client
    /// cancelled may still arrive on connections it has not closed yet.
    public func waitUntilIdle(timeout: Duration = .seconds(2)) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while openConnections > 0, clock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// When a response last finished sending its body (flushed to the socket); nil before.
    public var lastResponseEnd: ContinuousClock.Instant? { state.withLock { $0.lastResponseEnd } }

    /// Whether connections go mute once they have sent the object's end (`RangeFault.mute`).
    var mutes: Bool { has { if case .mute = $0 { return true } else { return false } } }

    /// Whether the next request on a kept-alive connection is to be met by closing it (`closeKeptAlive`); counts
    /// one.
    func closesKeptAlive() -> Bool {
        state.withLock { s in
            guard take(&s, { if case .closeKeptAlive = $0 { return true } else { return false } }) != nil else {
                return false
            }
            s.closedUnanswered += 1
            return true
        }
    }

    func responseSent(on channel: any Channel, mute: Bool) {
        state.withLock {
            $0.lastResponseEnd = .now
            if mute { $0.muted.append(channel) }
        }
    }

    /// Closes the listening socket (open connections end with their responses) and the connections a `mute`
    /// fault kept open.
    public func shutdown() async throws {
        let muted = state.withLock { s in
            defer { s.muted = [] }
            return s.muted
        }
        for connection in muted { try? await connection.close() }
        try await channel.close()
    }

    func has(_ match: (RangeFault) -> Bool) -> Bool {
        state.withLock { $0.faults.contains { match($0.fault) } }
    }

    /// Decides the answer to `request` (and consumes counted faults).
    func plan(_ request: ResponsePlan.Request) -> ResponsePlan {
        state.withLock { s in
            let index = s.requests.count
            var plan = decide(request, state: &s, index: index)
            s.requests.append(
                ServedRequest(
                    method: request.method, range: request.range, ifMatch: request.ifMatch, status: plan.status,
                    start: plan.start, bodyBytes: 0
                )
            )
            if request.method == "HEAD" { plan.end = plan.start }
            return plan
        }
    }

    private func take(_ s: inout State, _ match: (RangeFault) -> Bool) -> RangeFault? {
        guard let i = s.faults.firstIndex(where: { match($0.fault) && $0.remaining > 0 }) else { return nil }
        if s.faults[i].remaining != Int.max { s.faults[i].remaining -= 1 }
        return s.faults[i].fault
    }

    private func decide(_ request: ResponsePlan.Request, state s: inout State, index: Int) -> ResponsePlan {
        let content = s.content
        let flags = s.faults.map(\.fault)
        if let portal = Self.portalAnswer(request, flags: flags, index: index) { return portal }
        let weak = flags.contains { if case .weakETag = $0 { return true } else { return false } }
        let none = flags.contains { if case .noValidators = $0 { return true } else { return false } }
        let ignoreRange = flags.contains { if case .ignoreRange = $0 { return true } else { return false } }
        let ignorePre = flags.contains { if case .ignorePreconditions = $0 { return true } else { return false } }
        var changing: (honoursIfMatch: Bool, lastModified: Bool)?
        for f in flags { if case .changingETag(let h, let l) = f { changing = (h, l) } }
        let etag = changing == nil ? content.etag : "\"c\(index)-\(String(content.size, radix: 16))\""
        var headers: [(String, String)] = [("Accept-Ranges", "bytes"), ("Content-Type", "application/octet-stream")]
        if !none {
            headers.append(("ETag", weak ? "W/" + etag : etag))
            if changing?.lastModified ?? true { headers.append(("Last-Modified", content.lastModified)) }
        }
        if case .unavailable(let after, _)? = take(
            &s, { if case .unavailable = $0 { return true } else { return false } })
        {
            return ResponsePlan(
                status: 503, headers: [("Retry-After", "\(after)"), ("Content-Length", "0")], content: nil, index: index
            )
        }
        let noLength = flags.contains { if case .noLength = $0 { return true } else { return false } }
        for f in flags { if case .contentEncoding(let value) = f { headers.append(("Content-Encoding", value)) } }
        var range: ResponsePlan.ParsedRange?
        if let r = request.range, !ignoreRange, !noLength { range = ResponsePlan.parseRange(r, size: content.size) }
        if range != nil,
            take(&s, { if case .rangeNotSatisfiable = $0 { return true } else { return false } }) != nil
        {
            range = .unsatisfiable
        }
        if !ignorePre && !none {
            if let m = request.ifMatch, m != "*", changing?.honoursIfMatch ?? true,
                !m.split(separator: ",").contains(where: { $0.trimmed == etag }) || weak
            {
                return ResponsePlan(
                    status: 412, headers: headers + [("Content-Length", "0")], content: nil, index: index)
            }
            if let since = request.ifUnmodifiedSince, since != content.lastModified {
                return ResponsePlan(
                    status: 412, headers: headers + [("Content-Length", "0")], content: nil, index: index)
            }
            if let ifRange = request.ifRange, ifRange != etag || weak, ifRange != content.lastModified {
                range = nil
            }
        }
        var plan = ResponsePlan(status: 200, headers: headers, content: content, index: index)
        switch range {
        case .unsatisfiable:
            return ResponsePlan(
                status: 416,
                headers: headers + [("Content-Range", "bytes */\(content.size)"), ("Content-Length", "0")],
                content: nil, index: index
            )
        case .range(var first, var last):
            for f in flags { if case .capRanges(let most) = f, most > 0 { last = min(last, first + most - 1) } }
            if first > 0,
                case .earlierStart(let by, _)? = take(
                    &s, { if case .earlierStart = $0 { return true } else { return false } })
            {
                first = max(0, first - by)
            }
            plan.status = 206
            plan.start = first
            plan.end = last + 1
            var claimed = content.size
            for f in flags { if case .claimTotal(let total) = f { claimed = total } }
            plan.headers.append(("Content-Range", "bytes \(first)-\(last)/\(claimed)"))
        case nil:
            plan.start = 0
            plan.end = content.size
        }
        if !noLength { plan.headers.append(("Content-Length", "\(plan.end - plan.start)")) }
        if case .truncate(let after, _)? = take(&s, { if case .truncate = $0 { return true } else { return false } }) {
            plan.cutAfter = after
        } else if case .reset(let after, _)? = take(&s, { if case .reset = $0 { return true } else { return false } }) {
            plan.cutAfter = after
            plan.reset = true
        }
        for f in flags {
            if case .throttle(let bps) = f { plan.throttle = bps }
            if case .throttleAt(let start, let bps, let burst) = f, plan.start == start {
                plan.throttle = bps
                plan.burst = burst
            }
            if case .stallAt(let start, let after, let seconds) = f, plan.start == start {
                plan.stall = (after, seconds)
            }
            if case .corruptUnaligned(let alignment) = f, alignment > 0, plan.start % alignment != 0 {
                plan.corrupt = plan.start..<plan.end
            }
        }
        let body = plan.start..<max(plan.start, plan.end)
        if plan.corrupt == nil, !body.isEmpty,
            case .corruptRegion(let region, _)? = take(
                &s,
                {
                    if case .corruptRegion(let region, _) = $0 { return region.overlaps(body) } else { return false }
                })
        {
            plan.corrupt = region
        }
        return plan
    }

    /// The answer a fault gives to `request` in place of the object: a captive portal's page, a redirect.
    static func portalAnswer(_ request: ResponsePlan.Request, flags: [RangeFault], index: Int) -> ResponsePlan? {
        let page = RangeContent.bytes(RangeFault.portalPage)
        let pageHeaders = [
            ("Content-Type", "text/html; charset=utf-8"), ("Content-Length", "\(page.size)"),
            ("Cache-Control", "no-store"),
        ]
        for fault in flags {
            switch fault {
            case .captivePortal(let redirect):
                if redirect && request.path != "/login" {
                    return ResponsePlan(
                        status: 302, headers: [("Location", "/login"), ("Content-Length", "0")], content: nil,
                        index: index)
                }
                return ResponsePlan(status: 200, headers: pageHeaders, content: page, end: page.size, index: index)
            case .redirect(let location):
                return ResponsePlan(
                    status: 302, headers: [("Location", location), ("Content-Length", "0")], content: nil, index: index)
            case .networkAuthenticationRequired:
                return ResponsePlan(status: 511, headers: pageHeaders, content: page, end: page.size, index: index)
            default:
                continue
            }
        }
        return nil
    }

    /// Counts `n` bytes about to be sent for request `index`; returns how many may be sent before a
    /// `replace` fault swaps the object (then the connection must close).
    func willSend(_ n: Int64, index: Int) -> (allowed: Int64, replaced: Bool) {
        state.withLock { s in
            var allowed = n
            var replaced = false
            if let i = s.faults.firstIndex(where: {
                if case .replace = $0.fault { return $0.remaining > 0 } else { return false }
            }),
                case .replace(let after, let next) = s.faults[i].fault
            {
                if s.bytesServed + n >= after {
                    allowed = max(0, after - s.bytesServed)
                    s.content = next
                    s.faults[i].remaining = 0
                    replaced = true
                }
            }
            s.bytesServed += allowed
            if index < s.requests.count { s.requests[index].bodyBytes += allowed }
            return (allowed, replaced)
        }
    }
}

/// The handlers find the server through this box (the server exists only after bind).
final class ServerBox: Sendable {
    let server = Mutex<RangeServer?>(nil)
}

extension Substring {
    var trimmed: Substring {
        var s = self
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return s
    }
}
