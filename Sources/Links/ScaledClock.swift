/// A clock that runs `speed` times faster than real time: `meterwise demo --speed 4` plays a 20 s
/// scenario, its hysteresis and its timers in 5 s, consistently for every component sharing the clock.
public struct ScaledClock: Clock, Sendable {
    public typealias Instant = OffsetInstant

    public let speed: Double
    let origin: ContinuousClock.Instant

    public init(speed: Double = 1) {
        precondition(speed > 0, "speed must be positive")
        self.speed = speed
        self.origin = ContinuousClock.now
    }

    public var now: Instant { Instant(offset: (ContinuousClock.now - origin) * speed) }
    public var minimumResolution: Duration { .nanoseconds(1) }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let real = origin + deadline.offset / speed
        try await ContinuousClock().sleep(until: real, tolerance: nil)
    }
}

/// An instant measured as the time since its clock's origin (for `ScaledClock` and test clocks).
public struct OffsetInstant: InstantProtocol, Sendable {
    public var offset: Duration
    public init(offset: Duration) { self.offset = offset }
    public func advanced(by duration: Duration) -> OffsetInstant { OffsetInstant(offset: offset + duration) }
    public func duration(to other: OffsetInstant) -> Duration { other.offset - offset }
    public static func < (lhs: OffsetInstant, rhs: OffsetInstant) -> Bool { lhs.offset < rhs.offset }
}
