/// Receiver-side LEDBAT for one download (RFC 9840, with LEDBAT++'s rules): the receive window all its
/// connections may offer together, from the queuing delay they see. Pure; `ConnectionTap` feeds it every
/// `WindowGovernor.period` and carries the window out with TCP_WINDOW_CLAMP, shared among the connections.
///
/// The sender is a server we do not control; what the receiver controls is the window it advertises. The
/// queuing delay is the round trip now (the kernel's receiver-side estimate, from TCP timestamps) less the
/// lowest seen over the last minutes (the base). Under `target` the window grows like TCP's: doubling while
/// the delay is under three quarters of the target (slow start), then by a fraction of a segment per round
/// trip. Over the target it shrinks at once, in proportion to how far over, at most by half per round trip.
/// Every so often it drops to the floor for two round trips (LEDBAT++'s slowdown), so the queue it built
/// drains and a stale base is measured again.
///
/// One connection's window cannot go below a couple of segments, and a download's connections together at
/// that floor can still be most of a slow link. So the window is shared by as many connections as it holds
/// floors (`connections(for:least:)`); the others finish the request they have and ask for no more until
/// the window grows again. docs/background.md gives the numbers and their reasons.
public struct BackgroundWindow: Sendable {
    /// The queuing delay aimed at. LEDBAT++ uses 60 ms; a download that gives way to a call must stay well
    /// under what a call notices, and the kernel's timestamps have 1 ms steps.
    public static let defaultTarget: Duration = .milliseconds(5)
    /// How long one bucket of the base history lasts, and how many are kept: the base is the lowest round
    /// trip of the last 5 minutes.
    static let historyBucket: Duration = .seconds(30)
    static let historyBuckets = 10
    /// The most the additive increase is slowed on a short path (LEDBAT++: gain = 1 / min(16, ⌈2·target / base⌉)).
    static let gainLimit = 16.0
    /// A slowdown lasts two round trips and at least `slowdownLeast` (the kernel's round trip follows a lower
    /// sample at once, but a sample needs a segment to arrive); it comes again after `slowdownSpacing` times
    /// its length, and never sooner than `slowdownGap`.
    static let slowdownLeast: Duration = .milliseconds(40)
    static let slowdownSpacing = 9.0
    static let slowdownGap: Duration = .seconds(2)
    /// After this long without a new sample, the queuing delay is taken to halve each turn: the kernel takes
    /// no sample under its 1 ms clock step, so on a path shorter than that an empty queue sends none, and a
    /// last high value would otherwise hold the window down for ever.
    static let staleAfter: Duration = .milliseconds(100)
    /// Two segments a round trip can still be much of a slow link under another flow's queue (5 Mbit/s
    /// with a 20 ms queue: a quarter). So with the window at its floor and the delay at `yieldRatio` times
    /// the target or more, the download asks for nothing for `firstHold`, doubling up to `longestHold` while
    /// it lasts; the requests out finish.
    static let yieldRatio = 2.0
    static let firstHold: Duration = .milliseconds(100)
    static let longestHold: Duration = .seconds(1)
    /// The window a new download starts with, in segments (TCP's initial window).
    static let initialSegments = 10
    /// How many connections may have a request out before the first sample: the starting window's floors
    /// of two segments each.
    public static let startingConnections = initialSegments / 2
    /// The largest window: more than the kernel's largest receive buffer changes nothing.
    static let ceiling = 64 << 20

    public enum Phase: String, Sendable {
        case slowStart = "slow-start"
        case steady
        case slowdown
    }

    public let target: Duration
    public private(set) var phase: Phase = .slowStart
    /// The window of all the download's connections together, in bytes.
    public private(set) var window: Int
    /// The lowest round trip of the history; nil before the first sample.
    public private(set) var base: Duration?
    /// The last round trip fed in.
    public private(set) var roundTrip: Duration?

    private var minima: [Duration] = []
    private var bucketStart: ContinuousClock.Instant
    private var last: ContinuousClock.Instant
    private var lastDecrease: ContinuousClock.Instant?
    private var nextSlowdown: ContinuousClock.Instant?
    private var slowdownStart: ContinuousClock.Instant?
    private var restore = 0
    private var lastSample: ContinuousClock.Instant?
    private var holdUntil: ContinuousClock.Instant?
    private var holdLength: Duration = .zero

    /// The queuing delay now: the round trip less the base.
    public var queuingDelay: Duration? {
        guard let roundTrip, let base else { return nil }
        return max(.zero, roundTrip - base)
    }

    public init(at now: ContinuousClock.Instant, segment: Int, target: Duration = Self.defaultTarget) {
        self.target = target > .zero ? target : Self.defaultTarget
        window = Self.initialSegments * Self.segmentSize(segment)
        bucketStart = now
        last = now
    }

    /// A segment's size as the window's unit: the peer's largest segment, within 536 B…64 KiB.
    static func segmentSize(_ segment: Int) -> Int { min(max(536, segment), 64 << 10) }

    /// Takes one turn's sample: the lowest receiver round trip among the connections that had a new one
    /// (nil: none did, or the peer sends no timestamps), the lowest round trip the connections' kernels
    /// measured on what they sent (the handshake, the requests; nil when unknown), the bytes they received,
    /// the peer's segment size and the least window of one connection. Returns the window
    /// for all of them, or nil while there has never been a sample (the caller then governs as in the
    /// foreground).
    public mutating func update(
        roundTrip sample: Duration?, pathMinimum: Duration? = nil, delivered: Int64, segment: Int, floor: Int,
        at now: ContinuousClock.Instant
    ) -> Int? {
        let elapsed = now - last
        last = now
        let floor = max(0, floor)
        let segment = Self.segmentSize(segment)
        if let sample, sample > .zero {
            remember(sample, at: now)
            roundTrip = sample
            lastSample = now
        } else if let last = lastSample, now - last >= Self.staleAfter, let rtt = roundTrip, let base {
            roundTrip = base + (rtt - base) / 2
        }
        if let pathMinimum, pathMinimum > .zero, roundTrip != nil {
            // The kernel's clock for receiver samples has 1 ms steps; what it measured on our own segments
            // has microseconds, and is as much a round trip without our queue.
            base = min(base ?? pathMinimum, pathMinimum)
        }
        guard let rtt = roundTrip, let base, elapsed > .zero else { return base == nil ? nil : window }
        let delay = max(.zero, rtt - base)

        if phase == .slowdown {
            guard let start = slowdownStart, now - start >= max(rtt * 2, Self.slowdownLeast) else {
                window = floor
                return window
            }
            // The queue had two round trips to drain and the base its samples: back to the window before.
            let length = now - start
            window = max(floor, restore)
            phase = .steady
            slowdownStart = nil
            nextSlowdown = now + max(length * Self.slowdownSpacing, Self.slowdownGap)
            return window
        }

        let rttSeconds = max(rtt.secondsDouble, 1e-3)
        let rounds = min(max(elapsed.secondsDouble / rttSeconds, 1), 64)
        // The window was used: the sender, not the server or our reads, is what the window holds back.
        let used = Double(max(0, delivered)) >= 0.5 * Double(window) * elapsed.secondsDouble / rttSeconds
        let ratio = delay.secondsDouble / target.secondsDouble
        if delay <= target { holdLength = .zero }

        if delay > target {
            if lastDecrease.map({ now - $0 >= rtt }) ?? true {
                // After a hold, a sample of the probe that follows it first: the delay seen during the hold is
                // stale.
                let probed = holdUntil.map { end in lastSample.map { $0 > end } ?? false } ?? true
                if window <= floor && ratio >= Self.yieldRatio && !isHolding(at: now) && probed {
                    // One connection at its least window, and still another flow's queue: step aside.
                    holdLength = holdLength == .zero ? Self.firstHold : min(holdLength * 2, Self.longestHold)
                    holdUntil = now + holdLength
                }
                window = Int(Double(window) * max(0.5, 1 - (ratio - 1)))
                lastDecrease = now
            }
            if phase == .slowStart { endSlowStart(at: now, rtt: rtt) }
        } else if used {
            if phase == .slowStart && ratio < 0.75 {
                window += min(window, Int(clamping: max(0, delivered)))
            } else {
                if phase == .slowStart { endSlowStart(at: now, rtt: rtt) }
                window += Int(gain(base: base) * Double(segment) * rounds)
            }
        }
        window = min(max(window, floor), Self.ceiling)

        if phase == .steady, let next = nextSlowdown, now >= next {
            phase = .slowdown
            slowdownStart = now
            restore = window
            window = floor
        }
        return window
    }

    /// Whether the download is stepping aside now: no new request until the hold ends.
    public func isHolding(at now: ContinuousClock.Instant) -> Bool {
        holdUntil.map { now < $0 } ?? false
    }

    /// How many connections a window of `window` bytes is shared by, `least` bytes each at the least, out of
    /// `open`: at least one.
    public static func connections(for window: Int, least: Int, open: Int) -> Int {
        max(1, min(open, window / max(1, least)))
    }

    /// LEDBAT++'s gain: 1 / min(16, ⌈2·target / base⌉): on a short path a segment per round trip is a
    /// large step, so the window grows slower.
    private func gain(base: Duration) -> Double {
        1 / min(Self.gainLimit, max(1, (2 * target.secondsDouble / max(base.secondsDouble, 1e-6)).rounded(.up)))
    }

    private mutating func endSlowStart(at now: ContinuousClock.Instant, rtt: Duration) {
        phase = .steady
        // LEDBAT++: the first slowdown two round trips after slow start ends, to learn the base without the
        // queue slow start built.
        nextSlowdown = now + max(rtt * 2, WindowGovernor.period)
    }

    /// Adds a sample to the base history: one minimum per `historyBucket`, the last `historyBuckets` kept.
    private mutating func remember(_ sample: Duration, at now: ContinuousClock.Instant) {
        if minima.isEmpty || now - bucketStart >= Self.historyBucket {
            minima.append(sample)
            if minima.count > Self.historyBuckets { minima.removeFirst(minima.count - Self.historyBuckets) }
            bucketStart = now
        } else {
            minima[minima.count - 1] = min(minima[minima.count - 1], sample)
        }
        base = minima.min()
    }
}

/// What a background download's window controller shows: for `status`, events and `/metrics`.
public struct BackgroundState: Sendable, Equatable {
    /// The window of all the download's connections together, bytes.
    public var window: Int
    /// The lowest round trip of the history, seconds.
    public var baseDelay: Double?
    /// The round trip now less the base, seconds.
    public var queuingDelay: Double?
    /// The queuing delay aimed at, seconds.
    public var target: Double
    /// slow-start, steady or slowdown.
    public var phase: String
    /// How many connections may have a request out (the others wait for the window to grow).
    public var connections: Int

    public init(
        window: Int, baseDelay: Double?, queuingDelay: Double?, target: Double, phase: String, connections: Int
    ) {
        self.connections = connections
        self.window = window
        self.baseDelay = baseDelay
        self.queuingDelay = queuingDelay
        self.target = target
        self.phase = phase
    }
}

extension BackgroundWindow {
    /// The figures now, with the number of connections the window is shared by.
    public func state(connections: Int) -> BackgroundState {
        BackgroundState(
            window: window, baseDelay: base?.secondsDouble, queuingDelay: queuingDelay?.secondsDouble,
            target: target.secondsDouble, phase: phase.rawValue, connections: connections)
    }
}
