import Foundation

/// What a job should do now, and why. The result of `PolicySet.decide`.
public struct Decision: Sendable, Hashable {
    public var action: Action
    /// Bytes per second when the action is `throttle`; nil otherwise.
    public var rate: Int64?
    /// The links the job may use now (from the rule's `via`), primary first; empty when paused.
    public var allowedLinks: [String]
    /// The matched rule's name; nil when no rule matched and `defaults.action` applied.
    public var rule: String?
    /// Why, in plain words, most important first.
    public var reasons: [String]
    /// The next instant at which the answer can change by time alone (a window opens or closes, a budget
    /// period resets); nil when only a link change or usage can change it. The engine re-decides then.
    public var nextChange: Date?
    /// The budget key (see `Usage`) that the bytes this job moves now count against, if any.
    public var budgetKey: String?
    /// A spent budget that keeps a rule allowing more from matching: the first reason then names it.
    public var spentBudget: SpentBudget?
    /// That rule and its budget in a few words, for lists: `cell-allowance: budget cell is used up`.
    public var heldBy: String?
    /// The transfer mode the matched rule or `defaults` asks for; nil when neither says (a job's own
    /// `mode` comes first, then this, then background).
    public var mode: TransferMode?
    /// The matched rule's `prefer:`: which of a job's sources take its work while they serve; nil: all alike.
    public var prefer: SourcePreference?

    public init(
        action: Action, rate: Int64? = nil, allowedLinks: [String] = [], rule: String? = nil,
        reasons: [String] = [], nextChange: Date? = nil, budgetKey: String? = nil
    ) {
        self.action = action
        self.rate = rate
        self.allowedLinks = allowedLinks
        self.rule = rule
        self.reasons = reasons
        self.nextChange = nextChange
        self.budgetKey = budgetKey
    }

    /// A download may run now: the action is not `pause` and some link is allowed. The one definition of
    /// "may run": the planner, `check`, `run` and the control API use it (`ControlAPI.DecisionBody.mayRun`
    /// mirrors it on the wire, where the action is a string).
    public var mayRun: Bool { action != .pause && !allowedLinks.isEmpty }

    /// What a job does under this decision: equal outcomes are the same decision for whoever acts on it.
    public var outcome: Outcome { Outcome(self) }
}
