extension Decision {
    /// The parts of a decision that say what a job does: the one definition of "the same decision". When
    /// they are the same as last time, nothing changed; the reasons' wording and `nextChange` do not count.
    /// The engine keeps one per job (`DecisionKey`) and the decision loop (`run`, `check --watch`, the
    /// event stream's answers) yields a decision only when its outcome differs from the last one.
    public struct Outcome: Hashable, Sendable {
        public var action: Action
        public var rule: String?
        public var allowedLinks: [String]
        public var rate: Int64?
        /// A rule a spent budget keeps from matching: when it starts or stops, the reason changes.
        public var heldBy: String?

        public init(_ decision: Decision) {
            action = decision.action
            rule = decision.rule
            allowedLinks = decision.allowedLinks
            rate = decision.rate
            heldBy = decision.heldBy
        }
    }
}
