/// When a followed event stream counts as lost: the daemon sends a `keepalive` event every interval it
/// announces (`Meterwise-Keepalive: SECONDS`), so a stream with no line for `misses` intervals has a daemon
/// that is gone or stuck. Pure: the caller reads the clock.
public struct StreamLiveness: Sendable, Equatable {
    /// Intervals without a line before the stream counts as lost.
    public static let misses = 3
    /// The interval when the daemon announces none (an older daemon) or an unusable one.
    public static let defaultInterval = Duration.seconds(15)
    /// The longest wait for the response's head: a daemon that accepts and never answers is stuck.
    public static let headTimeout = Duration.seconds(10)

    /// The announced keep-alive interval.
    public let interval: Duration

    public init(interval: Duration) {
        self.interval = interval
    }

    /// The interval from the `Meterwise-Keepalive` header (untrusted: a number of seconds from 0.1 to 3600;
    /// anything else is the default).
    public init(header: String?) {
        guard let header, let seconds = Double(header), seconds.isFinite, seconds >= 0.1, seconds <= 3600 else {
            self.init(interval: Self.defaultInterval)
            return
        }
        self.init(interval: .milliseconds(Int64((seconds * 1000).rounded())))
    }

    /// How long the stream may stay silent.
    public var limit: Duration { interval * Self.misses }

    /// Whether a stream whose last bytes came `silence` ago is lost.
    public func isLost(after silence: Duration) -> Bool { silence >= limit }

    /// How long to wait, after `silence` without a line, before looking again (never less than 10 ms).
    public func nextLook(after silence: Duration) -> Duration { max(.milliseconds(10), limit - silence) }

    /// "4.5 s".
    public static func text(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let tenths = attoseconds / 100_000_000_000_000_000
        return "\(seconds).\(tenths) s"
    }
}
