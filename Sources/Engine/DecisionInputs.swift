import Foundation
import Links
import Policy

/// What a decision is made from, outside the engine: the last link snapshot, the policy, the budgets' usage.
/// Pure: `apply` takes a trigger, `decide` reads nothing else (the time is given).
public struct DecisionInputs: Sendable {
    /// What makes a decision loop decide again.
    public enum Trigger: Sendable {
        /// The links changed.
        case links(LinkSnapshot)
        /// The policy was reloaded.
        case policy(PolicySet)
        /// Bytes were counted against budgets.
        case usage(Usage)
        /// Something the loop's own `decide` reads changed (the engine's events).
        case changed
    }

    /// Nil until the first snapshot: nothing is decided before it (an empty snapshot would say "pause").
    public var snapshot: LinkSnapshot?
    public var policy: PolicySet
    public var usage: Usage
    public var timeZone: TimeZone

    public init(policy: PolicySet, snapshot: LinkSnapshot? = nil, usage: Usage = Usage(), timeZone: TimeZone = .current)
    {
        self.policy = policy
        self.snapshot = snapshot
        self.usage = usage
        self.timeZone = timeZone
    }

    public mutating func apply(_ trigger: Trigger) {
        switch trigger {
        case .links(let snapshot): self.snapshot = snapshot
        case .policy(let policy): self.policy = policy
        case .usage(let usage): self.usage = usage
        case .changed: break
        }
    }

    /// The policy's answer for `job` at `now`; nil before the first snapshot.
    public func decide(_ job: JobInfo, now: Date) -> Decision? {
        guard let snapshot else { return nil }
        return policy.decide(job: job, snapshot: snapshot, usage: usage, now: now, timeZone: timeZone)
    }
}
