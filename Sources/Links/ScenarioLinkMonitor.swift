/// The simulated backend of `LinkMonitor`: replays a `Scenario` on an injected clock.
///
/// With a `ContinuousClock` and `speed: 20`, a 20 s scenario plays in one second; tests pass a manual
/// clock and advance it. The sequence finishes at the scenario's `end`.
public struct ScenarioLinkMonitor<C: Clock>: LinkMonitor where C.Duration == Duration {
    public let scenario: Scenario
    public let clock: C
    public let speed: Double

    public init(scenario: Scenario, clock: C, speed: Double = 1) {
        precondition(speed > 0, "speed must be positive")
        self.scenario = scenario
        self.clock = clock
        self.speed = speed
    }

    /// The scenario's notes by step time, for timelines.
    public var notes: [(at: Duration, note: String)] {
        scenario.steps.compactMap { step in step.note.map { (step.at, $0) } }
    }

    public func snapshots() -> AsyncThrowingStream<LinkSnapshot, any Error> {
        let timeline = scenario.timeline()
        let end = scenario.end
        let clock = self.clock
        let speed = self.speed
        let start = clock.now
        let state = Cursor()
        return AsyncThrowingStream(unfolding: {
            let position = state.take()
            let target: Duration
            if position < timeline.count {
                target = timeline[position].at
            } else if position == timeline.count, end > (timeline.last?.at ?? .zero) {
                target = end
            } else {
                return nil
            }
            let deadline = start.advanced(by: target / speed)
            try await clock.sleep(until: deadline, tolerance: nil)
            return position < timeline.count ? timeline[position].snapshot : nil
        })
    }
}

/// The replay position; only the single consumer of the stream touches it, one `next()` at a time.
final class Cursor: @unchecked Sendable {
    private var position = 0
    func take() -> Int {
        defer { position += 1 }
        return position
    }
}
