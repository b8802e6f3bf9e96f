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

    public init(policy: PolicySet, snapshot: LinkSnapshot, usage: Usage, now: Date, timeZone: TimeZone) {
        self.policy = policy
        self.snapshot = snapshot
        self.now = now
        self.timeZone = timeZone
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let primary = snapshot.primary
        self.primary = primary
        let primaryClass = primary.map { policy.classify(link: $0) }
        self.primaryClass = primaryClass
        var uplinks = snapshot.uplinks.filter { $0.name != primary?.name }.map { ($0, policy.classify(link: $0)) }
        if let primary, let primaryClass { uplinks.insert((primary, primaryClass), at: 0) }
        self.uplinks = uplinks

        if let primary, let primaryClass {
            var text =
                "primary uplink \(primary.name) (\(primary.kind.rawValue)) is \(primaryClass.metered ? "metered" : "not metered")"
            if primaryClass.roaming { text += ", roaming" }
            if !primaryClass.labels.isEmpty { text += ", labels " + primaryClass.labels.joined(separator: ", ") }
            linkReasons = [text + ": " + primaryClass.sources.joined(separator: "; then ")]
        } else {
            linkReasons = ["no usable uplink (no link that is up has a default route)"]
        }

        let local = calendar.dateComponents([.weekday, .hour, .minute], from: now)
        let weekday = local.weekday ?? 1
        let minute = (local.hour ?? 0) * 60 + (local.minute ?? 0)
        let clock = TimeWindow.clock(minute) + " " + TimeWindow.dayNames[weekday - 1]

        var states: [RuleState] = []
        var nextChanges: [Date?] = []
        var earliest: Date?
        for rule in policy.rules {
            var s = RuleState(misses: [], passes: [], allowedLinks: [])
            let c = rule.when
            func test(_ ok: Bool, pass: @autoclosure () -> String, miss: @autoclosure () -> String) {
                if ok { s.passes.append(pass()) } else { s.misses.append(miss()) }
            }
            let usesLink =
                c.metered != nil || !c.kinds.isEmpty || !c.labels.isEmpty || !c.links.isEmpty || c.roaming != nil
            if usesLink {
                if let primary, let net = primaryClass {
                    if let m = c.metered {
                        test(
                            net.metered == m, pass: "metered is \(m ? "yes" : "no")",
                            miss:
                                "\(primary.name) is \(net.metered ? "metered" : "not metered"), the rule wants metered: \(m ? "yes" : "no")"
                        )
                    }
                    if !c.kinds.isEmpty {
                        let kinds = c.kinds.map(\.rawValue).joined(separator: "|")
                        test(
                            c.kinds.contains(primary.kind), pass: "kind \(primary.kind.rawValue) is \(kinds)",
                            miss: "\(primary.name) is kind \(primary.kind.rawValue), not \(kinds)")
                    }
                    if !c.labels.isEmpty {
                        let missing = c.labels.filter { !net.labels.contains($0) }
                        test(
                            missing.isEmpty, pass: "labels " + c.labels.joined(separator: ", "),
                            miss: "\(primary.name) lacks label\(missing.count == 1 ? "" : "s") "
                                + missing.joined(separator: ", "))
                    }
                    if !c.links.isEmpty {
                        let names = c.links.map(\.pattern).joined(separator: ", ")
                        test(
                            c.links.contains { $0.matches(primary.name) },
                            pass: "link \(primary.name) matches \(names)",
                            miss: "link \(primary.name) matches none of \(names)")
                    }
                    if let r = c.roaming {
                        test(
                            net.roaming == r, pass: "roaming is \(r ? "yes" : "no")",
                            miss:
                                "\(primary.name) is \(net.roaming ? "roaming" : "not roaming"), the rule wants roaming: \(r ? "yes" : "no")"
                        )
                    }
                } else {
                    s.misses.append("there is no primary uplink to test")
                }
            }
            if !c.windows.isEmpty {
                let windows = c.windows.map(\.description).joined(separator: ", ")
                test(
                    c.windows.contains { $0.contains(weekday: weekday, minute: minute) },
                    pass: "local time \(clock) is in \(windows)", miss: "local time \(clock) is outside \(windows)")
                for window in c.windows {
                    if let next = Self.nextBoundary(of: window, after: now, calendar: calendar) {
                        earliest = earliest.map { min($0, next) } ?? next
                    }
                }
            }
            if let budget = rule.budget {
                let period = budget.period(containing: now, calendar: calendar)
                let key = Budget.key(name: budget.name, start: period.start)
                let left = budget.bytes - usage.used(key)
                s.budgetKey = key
                let resets = Self.localStamp(period.end, calendar: calendar)
                s.budgetNote =
                    "budget \(budget.name): \(Units.formatBytes(max(0, budget.bytes - left))) of "
                    + "\(Units.formatBytes(budget.bytes)) used this \(budget.period.rawValue) period, resets \(resets)"
                test(
                    left > 0, pass: "budget \(budget.name) has \(Units.formatBytes(left)) left",
                    miss:
                        "budget \(budget.name) is used up (\(Units.formatBytes(budget.bytes)) this \(budget.period.rawValue) period), resets \(resets)"
                )
                if let test2 = c.budgetLeft {
                    test(
                        test2.matches(left), pass: "budget left \(Units.formatBytes(left)) is \(test2)",
                        miss: "budget left \(Units.formatBytes(max(0, left))) is not \(test2)")
                }
                earliest = earliest.map { min($0, period.end) } ?? period.end
            }
            if rule.action != .pause {
                if let primary, let net = primaryClass, net.metered, !rule.allowsMetered, s.misses.isEmpty {
                    s.misses.append(
                        "\(primary.name) is metered and this rule does not allow metered links "
                            + "(add `metered: yes` or `allow_metered: yes` to its when, or `via: any`)")
                }
                switch rule.effectiveVia {
                case .any: s.allowedLinks = uplinks.map(\.0.name)
                case .unmetered: s.allowedLinks = uplinks.filter { !$0.1.metered }.map(\.0.name)
                case .link(let name): s.allowedLinks = uplinks.contains { $0.0.name == name } ? [name] : []
                }
                if s.allowedLinks.isEmpty, s.misses.isEmpty {
                    s.misses.append("`via: \(rule.effectiveVia)` leaves no usable uplink")
                }
            }
            states.append(s)
            nextChanges.append(earliest)
        }
        for (index, rule) in policy.rules.enumerated() {
            var s = states[index]
            if rule.action == .throttle, let rate = rule.rate {
                s.matchedTail.append("throttled to \(Units.formatBytes(rate))/s")
            }
            if rule.action != .pause {
                s.matchedTail.append(
                    "may use " + s.allowedLinks.joined(separator: ", ") + " (via \(rule.effectiveVia))")
            }
            if let note = s.budgetNote { s.matchedTail.append(note) }
            s.matchedTail += linkReasons
            if !Self.hasJobTests(rule.when) { s.matchedHead = Self.head(rule.name, s.passes) }
            states[index] = s
        }
        self.states = states
        self.nextChanges = nextChanges
        self.fallback = Self.defaultDecision(
            policy: policy, primary: primary, primaryClass: primaryClass, uplinks: uplinks,
            next: nextChanges.last ?? nil, linkReasons: linkReasons)
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
    func evaluate(job: JobInfo, explaining: Bool, misses: inout [Explanation.Miss]) -> Decision {
        for (index, rule) in policy.rules.enumerated() {
            let state = states[index]
            if !explaining, !state.misses.isEmpty { continue }  // fast path: no need to say why
            var jobMisses: [String] = []
            var jobPasses: [String] = []
            if state.matchedHead == nil {
                Self.testJob(rule.when, job: job, misses: &jobMisses, passes: &jobPasses)
            }
            if state.misses.isEmpty && jobMisses.isEmpty {
                let head = state.matchedHead ?? Self.head(rule.name, state.passes + jobPasses)
                return Decision(
                    action: rule.action, rate: rule.action == .throttle ? rule.rate : nil,
                    allowedLinks: rule.action == .pause ? [] : state.allowedLinks, rule: rule.name,
                    reasons: [head] + state.matchedTail, nextChange: nextChanges[index],
                    budgetKey: rule.action == .pause ? nil : state.budgetKey)
            }
            if explaining { misses.append(.init(rule: rule.name, origin: rule.origin, why: state.misses + jobMisses)) }
        }
        return fallback
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
        return Decision(
            action: defaults.action, rate: defaults.action == .throttle ? defaults.rate : nil,
            allowedLinks: allowed, rule: nil, reasons: reasons + linkReasons, nextChange: next)
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
