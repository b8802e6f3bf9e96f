/// How many bytes one request of a segmented download asks for (pure).
///
/// No response is ever cut short to hand its tail to another segment: a cut throws away what the server
/// already sent (up to one receive window, megabytes on a fast path) and, over TLS, ends a connection that
/// could have carried the next request. So a segment asks for its assignment a span at a time, and an idle
/// segment takes only bytes nobody asked for yet (`RangePlan.assign`). A span lasts about `roundTrips`
/// round trips of the segment's own requests (the time from a request to its response head), within
/// `shortest`...`longest`: the head of each new request then costs about 1 % of the connection's time, and
/// the end of a download waits at most one span on a slower segment. docs/get.md, "Segments".
public struct RequestSpan: Sendable, Equatable {
    /// The first request of a download that may be segmented, before the length is known: it ends at a
    /// known byte, so the split after it cuts nothing.
    public static let first: Int64 = 2 << 20
    /// The least a request asks for.
    public static let least: Int64 = 256 << 10
    /// A span lasts this many of the segment's round trips...
    public static let roundTrips = 100.0
    /// ...but no less than this...
    public static let shortest: Duration = .milliseconds(20)
    /// ...and no more than this (the longest the end of a download waits on another segment's request).
    public static let longest: Duration = .seconds(2)

    /// In background mode (docs/background.md) a request is shorter, so a window shared among fewer
    /// connections (`RequestGate`) takes effect soon: the first asks for `backgroundFirst`, each one after
    /// for at most `backgroundLongest` at the segment's rate and at least `backgroundLeast`.
    public static let backgroundFirst: Int64 = 256 << 10
    public static let backgroundLeast: Int64 = 16 << 10
    public static let backgroundLongest: Duration = .milliseconds(250)

    /// A request is judged for slowness (`isTooSlow`) once it has run this long.
    public static let judged: Duration = .milliseconds(500)
    /// No request of the download has received a byte for this long: the process or every path was held up (a
    /// freeze, a suspended machine, a CPU taken by others), and no request's rate says anything of its own.
    public static let heldUp: Duration = .milliseconds(250)

    /// Whether a request in flight that received `done` bytes in `elapsed` and has `left` to go would take
    /// longer than `longest` to finish at that rate: then an idle segment may cut into it rather than wait
    /// (what the cut throws away is the slow connection's window, small at a low rate).
    public static func isTooSlow(left: Int64, done: Int64, elapsed: Duration) -> Bool {
        guard elapsed >= judged, left > 0 else { return false }
        guard done > 0 else { return true }
        return Double(left) / (Double(done) / elapsed.secondsDouble) > longest.secondsDouble
    }

    /// What is known of a request in flight's body: `done` bytes written over the window its rate is judged on,
    /// which lasts `elapsed`, and `quiet` since its last write. The window starts at its first bytes (those not
    /// counted) and, once its body has come for a second, half a second to a second back (`DownloadBoard`), so a
    /// request whose first megabyte came at once and the rest at a crawl is judged on the crawl.
    public struct Body: Sendable, Equatable {
        public var done: Int64
        public var elapsed: Duration
        public var quiet: Duration

        public init(done: Int64, elapsed: Duration, quiet: Duration) {
            self.done = done
            self.elapsed = elapsed
            self.quiet = quiet
        }
    }

    /// Whether a request in flight is too slow to wait for, and if so how much of its segment's range it keeps
    /// when an idle segment cuts into it (nil: wait for it). `left`: what its request has left; `remaining`: what
    /// its segment's range has left; `asked`: since it was asked; `body`: nil before its first bytes were written;
    /// `slowestFirstBytes`: the longest any request of this download waited for its first bytes; `sinceAnyBytes`: since
    /// any request of the download last received bytes.
    ///
    /// - No bytes yet: the wait for the first bytes says nothing of the rate (on a busy machine a fast answer's
    ///   first bytes can sit in the kernel for half a second while its segment waits for a CPU). After `longest`,
    ///   and twice the slowest first bytes seen, it is too slow and keeps half of its range (when that is at least
    ///   `least`): whoever takes the rest asks from another byte, so a server slow to answer one request, or slow
    ///   to answer every one, does not make two segments hand one range back and forth.
    /// - Bytes, then nothing for `longest`: a stall; it keeps nothing.
    /// - No request of the download received anything for `heldUp`: not judged on its rate (after a freeze of the
    ///   process every window looks slow while the kernel holds what came meanwhile, which a cut would throw away).
    /// - Otherwise judged on its body's rate over the window (once it lasts `judged`): too slow when the rest
    ///   would take more than `longest`; it keeps what it receives in `judged` at that rate, so the cut falls past
    ///   the bytes already on their way to it and throws little away. The window never starts before the first
    ///   bytes: on a busy machine they can wait for a CPU, and that wait is not the body's rate.
    public static func cut(
        left: Int64, remaining: Int64, asked: Duration, body: Body?, slowestFirstBytes: Duration,
        sinceAnyBytes: Duration = .zero
    ) -> Int64? {
        guard left > 0, remaining > 1 else { return nil }
        guard let body else {
            // Halves under `least` would cost a request each for little: the rest is left to it.
            guard asked >= longest, asked >= slowestFirstBytes * 2, remaining >= 2 * least else { return nil }
            return remaining / 2
        }
        if body.quiet >= longest { return 0 }
        if sinceAnyBytes >= heldUp { return nil }
        // Its first bytes alone say no rate yet: a stall shows as quiet above.
        guard body.done > 0, isTooSlow(left: left, done: body.done, elapsed: body.elapsed) else { return nil }
        let seconds = body.elapsed.secondsDouble
        let kept = Double(body.done) / seconds * judged.secondsDouble
        guard kept.isFinite, kept < Double(ObjectLimits.maxBytes) else { return ObjectLimits.maxBytes }
        return Int64(kept)
    }

    /// The last request's body rate, bytes per second (nil: none measured yet).
    public var rate: Double?
    /// The lowest time to a response head seen on a connection already open (nil: none yet).
    public var roundTrip: Duration?
    /// Requests recorded: the first one's head also waited for the connection (and its TLS handshake).
    public var requests = 0
    /// Background mode's shorter requests.
    public var background = false

    /// No request measured yet.
    public init(rate: Double? = nil, roundTrip: Duration? = nil) {
        self.rate = rate
        self.roundTrip = roundTrip
        self.requests = roundTrip == nil ? 0 : 2
    }

    /// Takes a finished request's figures: `bytes` of body received over `elapsed` from its first bytes, which
    /// came `head` after it was sent (its head, or later when the server sent the body after the head). Requests
    /// too short to say anything (under 64 KiB) are not taken, and the first one's head is not a round trip (it
    /// waited for the connection to open).
    public mutating func record(bytes: Int64, elapsed: Duration, head: Duration) {
        let seconds = elapsed.secondsDouble
        guard bytes >= 64 << 10, seconds > 0, head >= .zero else { return }
        requests += 1
        rate = Double(bytes) / seconds
        if requests > 1 { roundTrip = min(roundTrip ?? head, head) }
    }

    /// The bytes the segment's next request asks for; nil for all it has left. `segmented`: the download
    /// runs (or may run) more than one segment; `lengthKnown`: the object's length is known; `answered`:
    /// a response of this attempt has already been taken.
    public func bytes(segmented: Bool, lengthKnown: Bool, answered: Bool) -> Int64? {
        guard segmented else { return nil }
        let first = background ? Self.backgroundFirst : Self.first
        guard lengthKnown else { return answered ? nil : first }
        guard let rate, rate.isFinite, rate > 0, let roundTrip else { return first }
        let wanted = roundTrip.secondsDouble * Self.roundTrips
        let longest = background ? Self.backgroundLongest : Self.longest
        let seconds = min(max(wanted, Self.shortest.secondsDouble), longest.secondsDouble)
        let span = rate * seconds
        guard span.isFinite, span < Double(Int64.max / 2) else { return nil }
        return max(background ? Self.backgroundLeast : Self.least, Int64(span))
    }
}
