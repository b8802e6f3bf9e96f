import Synchronization

/// A token bucket as a value: `take` says how long to wait before `bytes` may pass at `rate`.
public struct TokenBucket: Sendable, Equatable {
    /// Bytes per second; nil is unlimited.
    public private(set) var rate: Int64?
    /// Tokens available (may go negative: debt paid by waiting).
    public private(set) var tokens: Double
    /// The last time tokens were added, in seconds on the caller's clock.
    public private(set) var last: Double

    /// A bucket at `rate` holding at most 100 ms of tokens (bursts stay short).
    public init(rate: Int64?, now: Double) {
        self.rate = rate
        self.tokens = 0
        self.last = now
    }

    var capacity: Double { Double(rate ?? 0) / 10 }

    /// Changes the rate; the bucket keeps no burst across a change.
    public mutating func setRate(_ rate: Int64?, now: Double) {
        self.rate = rate.flatMap { $0 > 0 ? $0 : nil }
        tokens = min(tokens, 0)
        last = now
    }

    /// Takes `bytes` tokens at time `now` (seconds) and returns how long to wait, zero when none.
    public mutating func take(_ bytes: Int, now: Double) -> Duration {
        guard let rate, rate > 0 else { return .zero }
        let r = Double(rate)
        tokens = min(capacity, tokens + (now - last) * r)
        last = now
        tokens -= Double(bytes)
        guard tokens < 0 else { return .zero }
        return .nanoseconds(Int64(-tokens / r * 1e9))
    }
}

/// The shared, changeable rate limit of one download: segments call `delay(for:)` per buffer.
final class RateLimiter: Sendable {
    private let bucket: Mutex<TokenBucket>
    private let clock = ContinuousClock()
    private let origin: ContinuousClock.Instant

    init(rate: Int64?) {
        origin = clock.now
        bucket = Mutex(TokenBucket(rate: rate, now: 0))
    }

    private var now: Double { (clock.now - origin).secondsDouble }

    func setRate(_ rate: Int64?) {
        let now = self.now
        bucket.withLock { $0.setRate(rate, now: now) }
    }

    var rate: Int64? { bucket.withLock { $0.rate } }

    /// Waits as long as the bucket says; cancellable. The wait ends early once `stop()` is true (checked
    /// every `slice`): a pausing download writes what it has already received instead of holding it back. A
    /// change of rate meanwhile rescales what is left of the wait (none when the limit is lifted): a wait
    /// taken at a slow pace does not outlast it.
    func wait(for bytes: Int, unless stop: () -> Bool = { false }) async throws {
        let now = self.now
        var (delay, rate) = bucket.withLock { ($0.take(bytes, now: now), $0.rate) }
        guard delay > .zero else { return }
        var end = clock.now.advanced(by: delay)
        while !stop() {
            let current = self.rate
            if current != rate {
                guard let current, let old = rate else { return }
                let left = max(.zero, clock.now.duration(to: end))
                end = clock.now.advanced(by: left * (Double(old) / Double(current)))
                rate = current
            }
            let left = clock.now.duration(to: end)
            guard left > .zero else { return }
            try await Task.sleep(for: min(left, Self.slice))
        }
    }

    /// How often a waiting segment looks whether its download is pausing.
    static let slice: Duration = .milliseconds(5)
}

extension Duration {
    var secondsDouble: Double {
        let (s, a) = components
        return Double(s) + Double(a) / 1e18
    }
}
