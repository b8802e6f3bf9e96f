import ConfigKit
import Foundation
import Links

/// Everything about one instant that does not depend on the job: the classified links, the local time,
/// which rules the links, windows and budgets let through, and the next time-driven change.
///
/// Build one per link change (or clock tick) and call `decide(job:)` for every job: the per-job work is
/// only the job's own tests. `PolicySet.decide(job:snapshot:usage:now:timeZone:)` does both in one call.
public struct DecisionContext: Sendable {
    /// The job-independent verdict on one rule.
    struct RuleState: Sendable {
        /// Why the rule cannot match now, whatever the job; empty when it can.
        var misses: [String]
        /// The tests that passed, for the reasons of a match.
        var passes: [String]
        var allowedLinks: [String]
        var budgetKey: String?
        var budgetNote: String?
        /// The rule's budget when it has no bytes left this period.
        var spent: SpentBudget?
        /// True when the spent budget is all that keeps the rule from matching (the job's own tests aside).
        var spentOnly = false
        /// The reasons after the first when this rule matches (rate, links, budget, the link's class).
        var matchedTail: [String] = []
        /// The first reason when the rule has no job tests (the same for every job).
        var matchedHead: String?
    }

    public let policy: PolicySet
    public let snapshot: LinkSnapshot
    public let now: Date
    public let timeZone: TimeZone
    /// The primary uplink the rules look at, and its class.
    public let primary: Link?
    public let primaryClass: NetworkClass?
    /// Every usable uplink with its class, primary first.
    public let uplinks: [(link: Link, network: NetworkClass)]
    let states: [RuleState]
    /// `nextChanges[i]`: the earliest time-driven change among rules 0...i; the last entry also covers
    /// the default.
    let nextChanges: [Date?]
    let linkReasons: [String]
    /// The decision when no rule matches (it does not depend on the job).
    let fallback: Decision
    /// The instant's facts, for the tests that depend on the job's owner (per-user budgets).
    let facts: RuleFacts

    public init(policy: PolicySet, snapshot: LinkSnapshot, usage: Usage, now: Date, timeZone: TimeZone) {
        self.policy = policy
        self.snapshot = snapshot
        self.now = now
        self.timeZone = timeZone
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone

        let primary = snapshot.primary
        let primaryClass = primary.map { policy.classify(link: $0) }
        self.primary = primary
        self.primaryClass = primaryClass
        self.uplinks = Self.classifiedUplinks(
            of: snapshot, policy: policy, primary: primary, primaryClass: primaryClass)
        self.linkReasons = Self.linkReasons(primary: primary, primaryClass: primaryClass)

        var facts = RuleFacts(
            primary: primary, primaryClass: primaryClass, uplinks: uplinks, usage: usage, now: now,
            calendar: calendar)
        facts.power = snapshot.power
        var states: [RuleState] = []
        var nextChanges: [Date?] = []
        var earliest: Date?
        for rule in policy.rules {
            let (state, next) = facts.state(of: rule)
            if let next { earliest = earliest.map { min($0, next) } ?? next }
            // A per-user budget's reasons are added per job, once its share is tested.
            states.append(
                rule.budget?.perUser == true
                    ? state : Self.withMatchedReasons(state, rule: rule, linkReasons: linkReasons))
            nextChanges.append(earliest)
        }
        self.facts = facts
        self.states = states
        self.nextChanges = nextChanges
        self.fallback = Self.defaultDecision(
            policy: policy, primary: primary, primaryClass: primaryClass, uplinks: uplinks,
            next: nextChanges.last ?? nil, linkReasons: linkReasons)
    }

    /// Every usable uplink with its class, the primary first.
    static func classifiedUplinks(
        of snapshot: LinkSnapshot, policy: PolicySet, primary: Link?, primaryClass: NetworkClass?
    ) -> [(link: Link, network: NetworkClass)] {
        var uplinks = snapshot.uplinks.filter { $0.name != primary?.name }.map { ($0, policy.classify(link: $0)) }
        if let primary, let primaryClass { uplinks.insert((primary, primaryClass), at: 0) }
        return uplinks
    }

    /// The reason every decision ends with: what the primary uplink is and why.
    static func linkReasons(primary: Link?, primaryClass: NetworkClass?) -> [String] {
        guard let primary, let primaryClass else {
            return ["no usable uplink (no link that is up has a default route)"]
        }
        var text =
            "primary uplink \(primary.name) (\(primary.kind.rawValue)) is "
            + (primaryClass.metered ? "metered" : "not metered")
        if primaryClass.roaming { text += ", roaming" }
        if !primaryClass.labels.isEmpty { text += ", labels " + primaryClass.labels.joined(separator: ", ") }
        return [text + ": " + primaryClass.sources.joined(separator: "; then ")]
    }

    /// Adds what a match of `rule` says after its first reason: rate, links, budget, the link's class.
    static func withMatchedReasons(_ state: RuleState, rule: Rule, linkReasons: [String]) -> RuleState {
        var state = state
        if rule.action == .throttle, let rate = rule.rate {
            state.matchedTail.append("throttled to \(Units.formatBytes(rate))/s")
        }
        if rule.action != .pause {
            state.matchedTail.append(
                "may use " + state.allowedLinks.joined(separator: ", ") + " (via \(rule.effectiveVia))")
        }
        if let note = state.budgetNote { state.matchedTail.append(note) }
        state.matchedTail += linkReasons
        if !hasJobTests(rule.when) && rule.budget?.perUser != true { state.matchedHead = head(rule.name, state.passes) }
        return state
    }

    static func hasJobTests(_ c: Condition) -> Bool {
        c.size != nil || c.priority != nil || !c.tags.isEmpty || c.allowMetered != nil || c.allowRoaming != nil
    }

    static func head(_ name: String, _ passes: [String]) -> String {
        "rule `\(name)` matched" + (passes.isEmpty ? " (it has no conditions)" : ": " + passes.joined(separator: ", "))
    }

    /// The decision for one job.
    public func decide(job: JobInfo) -> Decision {
        var unused: [Explanation.Miss] = []
        return evaluate(job: job, explaining: false, misses: &unused)
    }

    /// The decision for one job with, for every earlier rule, why it did not match.
    public func explain(job: JobInfo) -> Explanation {
        var misses: [Explanation.Miss] = []
        let decision = evaluate(job: job, explaining: true, misses: &misses)
        return Explanation(decision: decision, context: self, misses: misses)
    }

    /// The first rule that matches; with `explaining`, every rule before it goes into `misses` with why.
    /// When rules that would have let the job move more were skipped only because their budgets are spent,
    /// the decision says so first (`Decision.spentBudget`).
    func evaluate(job: JobInfo, explaining: Bool, misses: inout [Explanation.Miss]) -> Decision {
        var held: [(rule: Rule, budget: SpentBudget)] = []
        for (index, rule) in policy.rules.enumerated() {
            var state = states[index]
            if let budget = rule.budget, budget.perUser, explaining || state.misses.isEmpty {
                state = withUserBudget(budget, rule: rule, owner: job.owner, state)
            }
            // Fast path: no need to say why, unless the miss is a spent budget the answer must name.
            if !explaining, !state.misses.isEmpty, !state.spentOnly { continue }
            var jobMisses: [String] = []
            var jobPasses: [String] = []
            if state.matchedHead == nil {
                Self.testJob(rule.when, job: job, misses: &jobMisses, passes: &jobPasses)
            }
            if state.misses.isEmpty && jobMisses.isEmpty {
                let head = state.matchedHead ?? Self.head(rule.name, state.passes + jobPasses)
                let decision = Decision(
                    action: rule.action, rate: rule.action == .throttle ? rule.rate : nil,
                    allowedLinks: rule.action == .pause ? [] : state.allowedLinks, rule: rule.name,
                    reasons: [head] + state.matchedTail, nextChange: nextChanges[index],
                    budgetKey: rule.action == .pause ? nil : state.budgetKey)
                var moded = decision
                moded.mode = rule.mode ?? policy.defaults.mode
                moded.prefer = rule.action == .pause ? nil : rule.prefer
                return withSpentBudgets(ConnectivityGate.apply(moded, rule: rule, uplinks: gated), held)
            }
            if state.spentOnly, jobMisses.isEmpty, let spent = state.spent { held.append((rule, spent)) }
            if explaining { misses.append(.init(rule: rule.name, origin: rule.origin, why: state.misses + jobMisses)) }
        }
        return withSpentBudgets(ConnectivityGate.apply(fallback, rule: nil, uplinks: gated), held)
    }

    /// The usable uplinks, for `ConnectivityGate`.
    var gated: [Link] { uplinks.map(\.link) }

    /// A rule's job-independent state with its per-user budget tested for `owner`'s share, and the reasons
    /// of a match then.
    func withUserBudget(_ budget: Budget, rule: Rule, owner: UInt32?, _ base: RuleState) -> RuleState {
        var state = base
        let before = state.misses.count
        _ = facts.testBudget(budget, left: rule.when.budgetLeft, into: &state, owner: owner)
        state.spentOnly = before == 0 && state.spent != nil
        return Self.withMatchedReasons(state, rule: rule, linkReasons: linkReasons)
    }

    /// `decision` headed by the spent budgets of the `held` rules that would have let the job move more,
    /// the one that resets first first (it says when the job can move again).
    func withSpentBudgets(_ decision: Decision, _ held: [(rule: Rule, budget: SpentBudget)]) -> Decision {
        let stronger = held.filter { $0.rule.action.allowance > decision.action.allowance }
            .sorted { $0.budget.resets < $1.budget.resets }
        guard let first = stronger.first else { return decision }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        var decision = decision
        decision.spentBudget = first.budget
        decision.heldBy = "\(first.rule.name): budget \(first.budget.name) is used up"
        let heads = stronger.map {
            $0.budget.headline(rule: $0.rule.name, action: $0.rule.action, now: now, calendar: calendar)
        }
        decision.reasons.insert(contentsOf: heads, at: 0)
        return decision
    }

    static func defaultDecision(
        policy: PolicySet, primary: Link?, primaryClass: NetworkClass?, uplinks: [(link: Link, network: NetworkClass)],
        next: Date?, linkReasons: [String]
    ) -> Decision {
        let defaults = policy.defaults
        var reasons = ["no rule matched; the default action is \(defaults.action.rawValue)"]
        if defaults.action == .pause {
            return Decision(action: .pause, reasons: reasons + linkReasons, nextChange: next)
        }
        guard let primaryClass, let primary else {
            reasons.append("paused: there is no usable uplink")
            return Decision(action: .pause, reasons: reasons + linkReasons, nextChange: next)
        }
        if primaryClass.metered {
            reasons.append("paused: the default never uses a metered link, and \(primary.name) is metered")
            return Decision(action: .pause, reasons: reasons + linkReasons, nextChange: next)
        }
        let allowed = uplinks.filter { !$0.network.metered }.map(\.link.name)
        if defaults.action == .throttle, let rate = defaults.rate {
            reasons.append("throttled to \(Units.formatBytes(rate))/s")
        }
        reasons.append("may use " + allowed.joined(separator: ", ") + " (via unmetered)")
        var decision = Decision(
            action: defaults.action, rate: defaults.action == .throttle ? defaults.rate : nil,
            allowedLinks: allowed, rule: nil, reasons: reasons + linkReasons, nextChange: next)
        decision.mode = defaults.mode
        return decision
    }

    static func testJob(_ c: Condition, job: JobInfo, misses: inout [String], passes: inout [String]) {
        if let size = c.size {
            if let bytes = job.size {
                if size.matches(bytes) {
                    passes.append("size \(Units.formatBytes(bytes)) is \(size)")
                } else {
                    misses.append("size \(Units.formatBytes(bytes)) is not \(size)")
                }
            } else {
                misses.append("the job's size is unknown, the rule wants size \(size)")
            }
        }
        if let priority = c.priority {
            if priority.matches(Int64(job.priority)) {
                passes.append("priority \(job.priority) is \(priority)")
            } else {
                misses.append("priority \(job.priority) is not \(priority)")
            }
        }
        if !c.tags.isEmpty {
            let missing = c.tags.filter { !job.tags.contains($0) }
            if missing.isEmpty {
                passes.append("tags " + c.tags.joined(separator: ", "))
            } else {
                misses.append("the job lacks tag\(missing.count == 1 ? "" : "s") " + missing.joined(separator: ", "))
            }
        }
        if let allow = c.allowMetered {
            if job.allowMetered == allow {
                passes.append("allow_metered is \(allow ? "yes" : "no")")
            } else {
                misses.append("the job's allow_metered is \(job.allowMetered ? "yes" : "no")")
            }
        }
        if let allow = c.allowRoaming {
            let value = job.allowRoaming ?? false
            if value == allow {
                passes.append("allow_roaming is \(allow ? "yes" : "no")")
            } else {
                misses.append("the job's allow_roaming is \(value ? "yes" : "no")")
            }
        }
    }

    /// The next instant after `now` at which `window` opens or closes.
    static func nextBoundary(of window: TimeWindow, after now: Date, calendar: Calendar) -> Date? {
        let c = calendar.dateComponents([.year, .month, .day, .weekday], from: now)
        guard let y = c.year, let m = c.month, let d = c.day, let today = c.weekday else { return nil }
        func at(_ offset: Int, _ minutes: Int) -> Date? {
            calendar.date(
                from: DateComponents(
                    year: y, month: m, day: d + offset + minutes / 1440,
                    hour: (minutes % 1440) / 60, minute: minutes % 60))
        }
        var best: Date?
        // Days in order from yesterday (whose window may wrap into today); starts only grow with the
        // day, so the first day whose start is past the best candidate ends the search.
        for offset in -1...8 {
            let weekday = ((today - 1 + offset) % 7 + 7) % 7 + 1
            guard window.days.contains(weekday), let start = at(offset, window.start) else { continue }
            if let best, start > best { break }
            guard let end = at(offset, window.end + (window.wraps ? 1440 : 0)) else { continue }
            for candidate in [start, end] where candidate > now {
                best = best.map { min($0, candidate) } ?? candidate
            }
        }
        return best
    }

    /// `2026-12-01 00:00 CET`.
    static func localStamp(_ date: Date, calendar: Calendar) -> String {
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute], from: date)
        func p(_ n: Int?) -> String {
            let n = n ?? 0
            return n < 10 ? "0\(n)" : "\(n)"
        }
        let zone = calendar.timeZone.abbreviation(for: date) ?? calendar.timeZone.identifier
        return "\(c.year ?? 0)-\(p(c.month))-\(p(c.day)) \(p(c.hour)):\(p(c.minute)) \(zone)"
    }
}

extension PolicySet {
    /// Prepares the job-independent part of decisions for one snapshot, usage and instant.
    public func context(snapshot: LinkSnapshot, usage: Usage, now: Date, timeZone: TimeZone) -> DecisionContext {
        DecisionContext(policy: self, snapshot: snapshot, usage: usage, now: now, timeZone: timeZone)
    }

    /// What `job` should do now. Pure, deterministic and total: no I/O, no clock reads; the same inputs
    /// give the same decision. A metered primary uplink never gives `run` or `throttle` unless the
    /// matched rule explicitly allows metered links (`Rule.allowsMetered`).
    public func decide(job: JobInfo, snapshot: LinkSnapshot, usage: Usage, now: Date, timeZone: TimeZone) -> Decision {
        context(snapshot: snapshot, usage: usage, now: now, timeZone: timeZone).decide(job: job)
    }

    /// The decision with, for every rule before the matched one, why it did not match.
    public func explain(job: JobInfo, snapshot: LinkSnapshot, usage: Usage, now: Date, timeZone: TimeZone)
        -> Explanation
    {
        context(snapshot: snapshot, usage: usage, now: now, timeZone: timeZone).explain(job: job)
    }
}
