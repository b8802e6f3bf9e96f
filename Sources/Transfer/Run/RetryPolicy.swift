/// Exponential backoff with jitter, honouring Retry-After. Pure: the jitter is an argument.
public struct RetryPolicy: Sendable, Equatable {
    /// The first delay.
    public var base: Duration
    /// The longest delay backoff reaches.
    public var cap: Duration
    /// The longest Retry-After honoured.
    public var maxRetryAfter: Duration
    /// Attempts without progress before giving up; `Int.max` retries forever (the daemon: an outage is a
    /// wait, not a failure).
    public var maxAttempts: Int

    /// Creates a policy.
    public init(
        base: Duration = .milliseconds(250), cap: Duration = .seconds(30), maxRetryAfter: Duration = .seconds(300),
        maxAttempts: Int = 8
    ) {
        self.base = base
        self.cap = cap
        self.maxRetryAfter = maxRetryAfter
        self.maxAttempts = maxAttempts
    }

    /// The delay before retry number `attempt` (1-based), or nil when attempts are exhausted.
    /// `jitter` in 0..<1 spreads the delay over [50%, 100%] of the exponential step. A Retry-After
    /// from the server is a floor.
    public func delay(attempt: Int, retryAfter: Duration?, jitter: Double) -> Duration? {
        guard attempt >= 1, attempt <= maxAttempts else { return nil }
        var step = base
        for _ in 1..<min(attempt, 64) where step < cap { step = step * 2 }
        if step > cap { step = cap }
        let jittered = step * (0.5 + 0.5 * min(max(jitter, 0), 0.999_999))
        if let retryAfter { return max(jittered, min(retryAfter, maxRetryAfter)) }
        return jittered
    }

    /// Parses a Retry-After in seconds (the HTTP-date form is treated as "a while": 5 s).
    public static func parseRetryAfter(_ text: String) -> Duration? {
        let t = text.trimmingSpacesT
        if let seconds = Int64(t), seconds >= 0 { return .seconds(seconds) }
        return t.isEmpty ? nil : .seconds(5)
    }
}

extension String {
    var trimmingSpacesT: String {
        String(Substring(self).trimmingCharacters(" "))
    }
}
