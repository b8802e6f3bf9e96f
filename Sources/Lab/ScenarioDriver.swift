import Links

/// Replays a scenario in the lab's device namespace as real netlink operations (`ip link set`, `ip route`),
/// so the engine's libnl monitor sees real kernel events.
///
/// `plan()` is pure: the scenario's timeline turned into `RouteState`s and the `ip` commands between
/// them. `apply(_:)` runs one planned step; `replay(_:clock:)` runs steps at their (scaled) times.
public struct ScenarioDriver: Sendable {
    /// One step of the plan: when (already divided by the speed factor), the state it leads to, and the
    /// commands that get there from the previous step's state.
    public struct PlannedStep: Sendable, Hashable {
        public var index: Int
        public var at: Duration
        public var state: RouteState
        public var commands: [[String]]
        public var note: String?

        public init(index: Int, at: Duration, state: RouteState, commands: [[String]], note: String? = nil) {
            self.index = index
            self.at = at
            self.state = state
            self.commands = commands
            self.note = note
        }
    }

    /// A step the driver carried out: when its `ip` process started (the kernel events come a few
    /// milliseconds later) and when it returned, since the replay's start.
    public struct AppliedStep: Sendable, Hashable {
        public var step: PlannedStep
        public var appliedAt: Duration
        public var finishedAt: Duration

        public init(step: PlannedStep, appliedAt: Duration, finishedAt: Duration? = nil) {
            self.step = step
            self.appliedAt = appliedAt
            self.finishedAt = finishedAt ?? appliedAt
        }
    }

    public let scenario: Scenario
    public let uplinks: [LabUplink]
    /// Scenario seconds per real second (2: twice as fast).
    public let speed: Double

    public init(scenario: Scenario, uplinks: [LabUplink], speed: Double = 1) {
        self.scenario = scenario
        self.uplinks = uplinks
        self.speed = speed > 0 ? speed : 1
    }

    /// The scenario's end on the real clock.
    public var end: Duration { scenario.end / speed }

    /// Every step as `ip` commands, starting from the freshly built topology (`RouteState.initial`).
    public func plan() -> [PlannedStep] {
        var state = RouteState.initial(uplinks)
        var result: [PlannedStep] = []
        for (index, entry) in scenario.timeline().enumerated() {
            let next = RouteState(snapshot: entry.snapshot)
            result.append(
                PlannedStep(
                    index: index, at: entry.at / speed, state: next,
                    commands: RoutePlan.commands(from: state, to: next, uplinks: uplinks),
                    note: entry.note))
            state = next
        }
        return result
    }

    /// Runs one step's commands in `namespace`, in one `ip -batch` process so that they reach the
    /// kernel within a millisecond or two of each other.
    public func apply(_ step: PlannedStep, in namespace: Netns) throws(LabError) {
        guard !step.commands.isEmpty else { return }
        try Command.run(["ip", "-n", namespace.name, "-batch", "-"], input: Self.batch(step.commands))
    }

    /// The `ip -batch` text of `commands`: one command a line.
    public static func batch(_ commands: [[String]]) -> String {
        commands.map { $0.joined(separator: " ") + "\n" }.joined()
    }

    /// Runs `steps` at their times after `start`, then waits until the scenario's end; returns what it
    /// applied. Cancellation stops it between steps. `appliedAt` is taken just before a step's `ip`
    /// process starts.
    public func replay<C: Clock<Duration>>(
        _ steps: [PlannedStep], in namespace: Netns, clock: C, start: C.Instant,
        onApplied: @Sendable (AppliedStep) -> Void = { _ in }
    ) async throws -> [AppliedStep] {
        var applied: [AppliedStep] = []
        for step in steps {
            try await clock.sleep(until: start.advanced(by: step.at), tolerance: nil)
            let began = start.duration(to: clock.now)
            try apply(step, in: namespace)
            let done = AppliedStep(step: step, appliedAt: began, finishedAt: start.duration(to: clock.now))
            applied.append(done)
            onApplied(done)
        }
        try await clock.sleep(until: start.advanced(by: end), tolerance: nil)
        return applied
    }
}
