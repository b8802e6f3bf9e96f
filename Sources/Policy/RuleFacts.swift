import ConfigKit
import Foundation
import Links

/// The facts of one instant that a rule's job-independent tests read: the primary uplink and its class,
/// the usable uplinks, the budgets' usage and the local time. `state(of:)` runs those tests for one rule.
struct RuleFacts {
    let primary: Link?
    let primaryClass: NetworkClass?
    let uplinks: [(link: Link, network: NetworkClass)]
    let usage: Usage
    /// The machine's power supply (`PowerFacts`), for `power`, `battery` and `power_saver`.
    var power = PowerFacts.unknown
    let now: Date
    let calendar: Calendar
    /// Day of the week (1 = Sunday) and minute of the day, local time.
    let weekday: Int
    let minute: Int

    init(
        primary: Link?, primaryClass: NetworkClass?, uplinks: [(link: Link, network: NetworkClass)], usage: Usage,
        now: Date, calendar: Calendar
    ) {
        self.primary = primary
        self.primaryClass = primaryClass
        self.uplinks = uplinks
        self.usage = usage
        self.now = now
        self.calendar = calendar
        let local = calendar.dateComponents([.weekday, .hour, .minute], from: now)
        self.weekday = local.weekday ?? 1
        self.minute = (local.hour ?? 0) * 60 + (local.minute ?? 0)
    }

    /// `14:05 Mon`.
    var clockLabel: String { TimeWindow.clock(minute) + " " + TimeWindow.dayNames[weekday - 1] }

    /// The job-independent verdict on `rule`, and the next instant at which one of its time-driven tests
    /// (window, budget period) can change.
    func state(of rule: Rule) -> (DecisionContext.RuleState, next: Date?) {
        var state = DecisionContext.RuleState(misses: [], passes: [], allowedLinks: [])
        var next: Date?
        func later(_ date: Date?) {
            guard let date else { return }
            next = next.map { min($0, date) } ?? date
        }
        testLink(rule.when, into: &state)
        testPower(rule.when, into: &state)
        later(testWindows(rule.when, into: &state))
        let beforeBudget = state.misses.count
        if let budget = rule.budget {
            // A per-user budget is tested per job (`DecisionContext.withUserBudget`); its period still ends.
            if budget.perUser {
                later(budget.period(containing: now, calendar: calendar).end)
            } else {
                later(testBudget(budget, left: rule.when.budgetLeft, into: &state))
            }
        }
        // Only the budget stands in the way so far: whether the rule would run without it is tested as if
        // it had bytes left, so a spent budget can be named as the reason (`RuleState.spentOnly`).
        let budgetOnly = beforeBudget == 0 && state.spent != nil
        let budgetMisses = state.misses.count - beforeBudget
        if rule.action != .pause { testReach(rule, into: &state, ignoring: budgetOnly ? budgetMisses : 0) }
        state.spentOnly = budgetOnly && state.misses.count == budgetMisses
        return (state, next)
    }

    /// The tests on the primary uplink: metered, kind, labels, link name, roaming.
    func testLink(_ when: Condition, into state: inout DecisionContext.RuleState) {
        let usesLink =
            when.metered != nil || !when.kinds.isEmpty || !when.labels.isEmpty || !when.links.isEmpty
            || when.roaming != nil || !when.connectivity.isEmpty
        guard usesLink else { return }
        guard let primary, let network = primaryClass else {
            state.misses.append("there is no primary uplink to test")
            return
        }
        let name = primary.name
        if let metered = when.metered {
            state.test(
                network.metered == metered, pass: "metered is \(Self.yesNo(metered))",
                miss: "\(name) is \(network.metered ? "metered" : "not metered"), the rule wants metered: "
                    + Self.yesNo(metered))
        }
        if !when.kinds.isEmpty {
            let kinds = when.kinds.map(\.rawValue).joined(separator: "|")
            state.test(
                when.kinds.contains(primary.kind), pass: "kind \(primary.kind.rawValue) is \(kinds)",
                miss: "\(name) is kind \(primary.kind.rawValue), not \(kinds)")
        }
        if !when.labels.isEmpty {
            let missing = when.labels.filter { !network.labels.contains($0) }
            state.test(
                missing.isEmpty, pass: "labels " + when.labels.joined(separator: ", "),
                miss: "\(name) lacks label\(missing.count == 1 ? "" : "s") " + missing.joined(separator: ", "))
        }
        if !when.links.isEmpty {
            let names = when.links.map(\.pattern).joined(separator: ", ")
            state.test(
                when.links.contains { $0.matches(name) }, pass: "link \(name) matches \(names)",
                miss: "link \(name) matches none of \(names)")
        }
        if !when.connectivity.isEmpty {
            let reached = primary.connectivity ?? .unknown
            let wanted = when.connectivity.map(\.rawValue).joined(separator: "|")
            state.test(
                when.connectivity.contains(reached), pass: "connectivity \(reached.rawValue) is \(wanted)",
                miss: "\(name)'s connectivity is \(reached.rawValue), not \(wanted)")
        }
        if let roaming = when.roaming {
            state.test(
                network.roaming == roaming, pass: "roaming is \(Self.yesNo(roaming))",
                miss: "\(name) is \(network.roaming ? "roaming" : "not roaming"), the rule wants roaming: "
                    + Self.yesNo(roaming))
        }
    }

    /// The tests on the power supply; an unknown fact never passes (a machine without UPower, without a
    /// battery), so rules that pause on battery leave such machines alone.
    func testPower(_ when: Condition, into state: inout DecisionContext.RuleState) {
        let source = power.sources.isEmpty ? "" : " (\(power.sources.joined(separator: ", ")))"
        if let wanted = when.onBattery {
            if let onBattery = power.onBattery {
                state.test(
                    onBattery == wanted, pass: "power is \(wanted ? "battery" : "ac")\(source)",
                    miss:
                        "power is \(onBattery ? "battery" : "ac")\(source), the rule wants \(wanted ? "battery" : "ac")"
                )
            } else {
                state.misses.append("the power supply is unknown (no UPower)")
            }
        }
        if let wanted = when.battery {
            if let percent = power.batteryPercent {
                let whole = Int64(percent.rounded(.down))
                state.test(
                    wanted.matches(whole), pass: "battery \(whole)% is \(wanted)\(source)",
                    miss: "battery \(whole)% is not \(wanted)\(source)")
            } else {
                state.misses.append("there is no battery charge to test (no battery, or no UPower)")
            }
        }
        if let wanted = when.powerSaver {
            if let saver = power.powerSaver {
                state.test(
                    saver == wanted, pass: "power_saver is \(Self.yesNo(wanted))\(source)",
                    miss:
                        "the power profile is \(power.profile ?? "?")\(source), the rule wants power_saver: \(Self.yesNo(wanted))"
                )
            } else {
                state.misses.append("the power profile is unknown (no power-profiles-daemon)")
            }
        }
    }

    /// The time-window test; returns the next instant at which one of the windows opens or closes.
    func testWindows(_ when: Condition, into state: inout DecisionContext.RuleState) -> Date? {
        guard !when.windows.isEmpty else { return nil }
        let windows = when.windows.map(\.description).joined(separator: ", ")
        state.test(
            when.windows.contains { $0.contains(weekday: weekday, minute: minute) },
            pass: "local time \(clockLabel) is in \(windows)", miss: "local time \(clockLabel) is outside \(windows)")
        return when.windows.compactMap { DecisionContext.nextBoundary(of: $0, after: now, calendar: calendar) }.min()
    }

    /// The budget's tests (something left, and `budget_left` when set); returns the end of its period.
    func testBudget(
        _ budget: Budget, left wanted: Comparison?, into state: inout DecisionContext.RuleState, owner: UInt32? = nil
    ) -> Date {
        let period = budget.period(containing: now, calendar: calendar)
        let key = budget.key(start: period.start, owner: owner)
        let used = max(0, usage.used(key))
        let left = budget.bytes - min(used, budget.bytes)
        let limit = Units.formatBytes(budget.bytes)
        let resets = DecisionContext.localStamp(period.end, calendar: calendar)
        state.budgetKey = key
        if left == 0 {
            state.spent = SpentBudget(
                name: budget.name, used: used, bytes: budget.bytes, period: budget.period, resets: period.end)
        }
        state.budgetNote =
            "budget \(budget.name)\(budget.perUser ? " (this user's share)" : ""): \(Units.formatBytes(used)) of \(limit) used this \(budget.period.rawValue) "
            + "period, resets \(resets)"
        state.test(
            left > 0, pass: "budget \(budget.name) has \(Units.formatBytes(left)) left",
            miss:
                "budget \(budget.name) is used up (\(Units.formatBytes(used)) of \(limit) this \(budget.period.rawValue) period), "
                + "resets \(resets)")
        if let wanted {
            state.test(
                wanted.matches(left), pass: "budget left \(Units.formatBytes(left)) is \(wanted)",
                miss: "budget left \(Units.formatBytes(left)) is not \(wanted)")
        }
        return period.end
    }

    /// For a rule that moves bytes: may it use the metered primary, and which uplinks does `via` leave?
    /// These tests speak only when nothing else missed yet, `ignoring` that many earlier misses.
    func testReach(_ rule: Rule, into state: inout DecisionContext.RuleState, ignoring: Int = 0) {
        if let primary, let network = primaryClass, network.metered, !rule.allowsMetered, state.misses.count <= ignoring
        {
            state.misses.append(
                "\(primary.name) is metered and this rule does not allow metered links "
                    + "(add `metered: yes` or `allow_metered: yes` to its when, or `via: any`)")
        }
        switch rule.effectiveVia {
        case .any: state.allowedLinks = uplinks.map(\.link.name)
        case .unmetered: state.allowedLinks = uplinks.filter { !$0.network.metered }.map(\.link.name)
        case .link(let name): state.allowedLinks = uplinks.contains { $0.link.name == name } ? [name] : []
        }
        if state.allowedLinks.isEmpty, state.misses.count <= ignoring {
            state.misses.append("`via: \(rule.effectiveVia)` leaves no usable uplink")
        }
    }

    static func yesNo(_ value: Bool) -> String { value ? "yes" : "no" }
}

extension DecisionContext.RuleState {
    /// Records one test: its pass text when `ok`, else its miss text.
    mutating func test(_ ok: Bool, pass: @autoclosure () -> String, miss: @autoclosure () -> String) {
        if ok { passes.append(pass()) } else { misses.append(miss()) }
    }
}
