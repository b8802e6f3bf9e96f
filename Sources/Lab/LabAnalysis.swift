/// Figures from counters sampled during a lab run: pure, so they are tested with made-up samples.
public enum LabAnalysis {
    /// The device's rx counters at one instant (time since the run started).
    public struct Sample: Sendable, Hashable {
        public var at: Duration
        public var rx: [String: Int64]
        public init(at: Duration, rx: [String: Int64]) {
            self.at = at
            self.rx = rx
        }
    }

    /// What happened on the links between one step and the next.
    public struct StepFigures: Sendable, Hashable {
        public var index: Int
        /// When the step's `ip` process started, since the run started.
        public var at: Duration
        /// How long the step's `ip` process took (its kernel events happened within that time).
        public var ipTime: Duration
        public var primary: String?
        public var note: String?
        /// Bytes each link received until the next step (or the end).
        public var rxBytes: [String: Int64]
        /// For each link that went down or stopped being the primary at this step: how long after the
        /// step its rx counter last grew (zero when it never grew again), at the sampling resolution.
        public var lastRxAfter: [String: Duration]
    }

    /// One `StepFigures` per applied step.
    public static func steps(
        _ applied: [ScenarioDriver.AppliedStep], samples: [Sample],
        previous initial: RouteState, until end: Duration
    ) -> [StepFigures] {
        var result: [StepFigures] = []
        var before = initial
        for (position, step) in applied.enumerated() {
            let from = step.appliedAt
            let to = position + 1 < applied.count ? applied[position + 1].appliedAt : end
            let state = step.step.state
            var rx: [String: Int64] = [:]
            for name in state.up.union(before.up) {
                rx[name] = value(name, at: to, in: samples) - value(name, at: from, in: samples)
            }
            var lastRx: [String: Duration] = [:]
            for name in before.up where !state.up.contains(name) || (before.primary == name && state.primary != name) {
                lastRx[name] = lastGrowth(name, from: from, to: to, in: samples)
            }
            result.append(
                StepFigures(
                    index: step.step.index, at: from, ipTime: step.finishedAt - step.appliedAt,
                    primary: state.primary, note: step.step.note,
                    rxBytes: rx, lastRxAfter: lastRx))
            before = state
        }
        return result
    }

    /// Bytes each metered (slow-kind) link received while it was the primary uplink: the lab's leakage.
    public static func meteredPrimaryBytes(_ figures: [StepFigures], uplinks: [LabUplink]) -> [String: Int64] {
        var result: [String: Int64] = [:]
        for uplink in uplinks where uplink.isSlowKind {
            result[uplink.name] = figures.filter { $0.primary == uplink.name }
                .reduce(0) { $0 + ($1.rxBytes[uplink.name] ?? 0) }
        }
        return result
    }

    /// The counter at `time`: the last sample at or before it (the first sample when none is).
    static func value(_ name: String, at time: Duration, in samples: [Sample]) -> Int64 {
        let before = samples.last { $0.at <= time && $0.rx[name] != nil } ?? samples.first { $0.rx[name] != nil }
        return before?.rx[name] ?? 0
    }

    static func lastGrowth(_ name: String, from: Duration, to: Duration, in samples: [Sample]) -> Duration {
        var last = Duration.zero
        var previous = value(name, at: from, in: samples)
        for sample in samples where sample.at > from && sample.at <= to {
            guard let rx = sample.rx[name] else { continue }
            if rx > previous { last = sample.at - from }
            previous = rx
        }
        return last
    }
}
