/// What the monitor does after a netlink failure: reopen after a back-off, or give up for good.
///
/// A pure state machine (no clock reads: times are durations since the monitor started). A failure
/// waits `firstDelay`, doubling up to `maxDelay`. A session that stayed healthy for `healthyAfter`
/// before it failed starts a new streak; one that fails sooner (every reopen works, then the next
/// receive fails) does not, so a socket that keeps failing cannot loop quickly forever. After at least
/// `maxFailures` failures in a streak lasting at least `window`, the monitor gives up: its stream throws
/// and a daemon exits non-zero, so the service manager restarts it.
public struct NetlinkRecovery: Sendable, Hashable {
    /// The bounds of recovery.
    public struct Limits: Sendable, Hashable {
        public var firstDelay: Duration
        public var maxDelay: Duration
        public var maxFailures: Int
        public var window: Duration
        public var healthyAfter: Duration

        /// 50 ms doubling to 5 s; giving up after 10 failures over at least 60 s with no session healthy for 5 s.
        public init(
            firstDelay: Duration = .milliseconds(50), maxDelay: Duration = .seconds(5), maxFailures: Int = 10,
            window: Duration = .seconds(60), healthyAfter: Duration = .seconds(5)
        ) {
            self.firstDelay = max(firstDelay, .zero)
            self.maxDelay = max(maxDelay, self.firstDelay)
            self.maxFailures = max(maxFailures, 1)
            self.window = max(window, .zero)
            self.healthyAfter = max(healthyAfter, .zero)
        }
    }

    /// What to do after a failure.
    public enum Action: Sendable, Hashable {
        /// Reopen the sockets and read everything again after this delay.
        case reopen(after: Duration)
        /// Stop: `failures` failures in a row over `over`.
        case giveUp(failures: Int, over: Duration)
    }

    public let limits: Limits
    /// Failures in the current streak.
    public private(set) var failures = 0
    /// When the current streak's first failure came.
    private var streakStart: Duration?
    /// When the current session read its snapshot (open and dump done), if one did since the last failure.
    private var sessionStart: Duration?

    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// The sockets are open and everything was read at `now`.
    public mutating func opened(at now: Duration) {
        sessionStart = now
    }

    /// Netlink failed at `now`.
    public mutating func failed(at now: Duration) -> Action {
        if let sessionStart, now - sessionStart >= limits.healthyAfter {
            failures = 0
            streakStart = nil
        }
        sessionStart = nil
        failures += 1
        let start = streakStart ?? now
        streakStart = start
        if failures >= limits.maxFailures && now - start >= limits.window {
            return .giveUp(failures: failures, over: now - start)
        }
        return .reopen(after: delay(failures))
    }

    /// The back-off before the `failure`-th reopen: `firstDelay` doubled `failure - 1` times, at most `maxDelay`.
    func delay(_ failure: Int) -> Duration {
        var delay = limits.firstDelay
        for _ in 1..<max(failure, 1) {
            guard delay < limits.maxDelay else { break }
            delay = delay * 2
        }
        return min(delay, limits.maxDelay)
    }
}
