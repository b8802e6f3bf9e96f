import Foundation
import Testing

@testable import Policy

@Suite struct BudgetTests {
    static func calendar(_ zone: TimeZone) -> Calendar {
        var c = Calendar(identifier: .gregorian)
        c.timeZone = zone
        return c
    }

    /// Period boundaries: (budget, instant, expected period start, expected period end).
    @Test(arguments: [
        (
            Budget(name: "m", bytes: 1, period: .monthly), "2026-11-30T22:59:59Z", "2026-10-31T23:00:00Z",
            "2026-11-30T23:00:00Z"
        ),
        (
            Budget(name: "m", bytes: 1, period: .monthly), "2026-11-30T23:00:00Z", "2026-11-30T23:00:00Z",
            "2026-12-31T23:00:00Z"
        ),
        (
            Budget(name: "m", bytes: 1, period: .monthly, resetDay: 15), "2026-01-10T12:00:00Z", "2025-12-14T23:00:00Z",
            "2026-01-14T23:00:00Z"
        ),
        (
            Budget(name: "w", bytes: 1, period: .weekly), "2026-11-22T22:59:00Z", "2026-11-15T23:00:00Z",
            "2026-11-22T23:00:00Z"
        ),
        (
            Budget(name: "w", bytes: 1, period: .weekly), "2026-11-22T23:00:00Z", "2026-11-22T23:00:00Z",
            "2026-11-29T23:00:00Z"
        ),
        (
            Budget(name: "d", bytes: 1, period: .daily, resetMinute: 180), "2026-11-22T01:59:00Z",
            "2026-11-21T02:00:00Z", "2026-11-22T02:00:00Z"
        ),
        (
            Budget(name: "d", bytes: 1, period: .daily, resetMinute: 180), "2026-11-22T02:00:00Z",
            "2026-11-22T02:00:00Z", "2026-11-23T02:00:00Z"
        ),
        // The day DST ends in Berlin is 25 hours long.
        (
            Budget(name: "d", bytes: 1, period: .daily), "2026-10-25T12:00:00Z", "2026-10-24T22:00:00Z",
            "2026-10-25T23:00:00Z"
        ),
    ])
    func periodBoundaries(budget: Budget, at: String, start: String, end: String) {
        let period = budget.period(containing: Fixtures.date(at), calendar: Self.calendar(Fixtures.berlin))
        #expect(period.start == Fixtures.date(start))
        #expect(period.end == Fixtures.date(end))
    }

    static let policyText = """
        rules:
          - name: cellular
            when: { metered: yes }
            throttle: 1MiB/s
            budget: { name: cell, bytes: 500MiB, period: monthly }
          - name: wait
            action: pause
        """

    @Test func budgetIsEnforcedAndResetsWithThePeriod() throws {
        let policy = try Fixtures.policy(Self.policyText)
        let zone = Fixtures.berlin
        let before = Fixtures.date("2026-11-30T20:00:00Z")
        var usage = Usage()
        let first = policy.decide(
            job: JobInfo(), snapshot: Fixtures.onCellular, usage: usage, now: before, timeZone: zone)
        #expect(first.rule == "cellular" && first.action == .throttle)
        #expect(first.nextChange == Fixtures.date("2026-11-30T23:00:00Z"))
        let key = try #require(first.budgetKey)
        usage.record(bytes: 499 << 20, decision: first)
        #expect(
            policy.decide(job: JobInfo(), snapshot: Fixtures.onCellular, usage: usage, now: before, timeZone: zone).rule
                == "cellular")
        usage.record(bytes: 1 << 20, budgetKey: key)
        let spent = policy.decide(
            job: JobInfo(), snapshot: Fixtures.onCellular, usage: usage, now: before, timeZone: zone)
        #expect(spent.rule == "wait" && spent.action == .pause && spent.budgetKey == nil)
        #expect(spent.nextChange == Fixtures.date("2026-11-30T23:00:00Z"))
        let after = policy.decide(
            job: JobInfo(), snapshot: Fixtures.onCellular, usage: usage,
            now: Fixtures.date("2026-11-30T23:00:00Z"), timeZone: zone)
        #expect(after.rule == "cellular")
        #expect(after.budgetKey != key)
        usage.prune(keeping: [after.budgetKey!])
        #expect(usage.bytes.isEmpty)
    }

    @Test func usageIsCodableAndSaturates() throws {
        var usage = Usage()
        usage.record(bytes: .max, budgetKey: "a@0")
        usage.record(bytes: 10, budgetKey: "a@0")
        usage.record(bytes: -5, budgetKey: "a@0")
        #expect(usage.used("a@0") == .max)
        let data = try JSONEncoder().encode(usage)
        #expect(try JSONDecoder().decode(Usage.self, from: data) == usage)
    }

    static let dailyCell = """
        rules:
          - name: cell-allowance
            when: { metered: yes }
            action: run
            budget: { name: cell, bytes: 6MiB, period: daily }
          - name: small-anyway
            when: { metered: yes, size: "< 1KiB" }
            throttle: 1KiB/s
        """

    /// A rule skipped only because its budget is spent is named first, whether no rule matched or a
    /// stricter one did; the job's own misses and rules that would not allow more are not blamed.
    @Test func aSpentBudgetIsTheHeadline() throws {
        let policy = try Fixtures.policy(Self.dailyCell)
        let now = Fixtures.date("2026-11-18T20:48:00Z")  // 21:48 in Berlin: resets 00:00, in 2 h 12 m
        var usage = Usage()
        let first = policy.decide(
            job: JobInfo(), snapshot: Fixtures.onCellular, usage: usage, now: now, timeZone: Fixtures.berlin)
        #expect(first.rule == "cell-allowance" && first.heldBy == nil)
        usage.record(bytes: 6_319_941, decision: first)

        let spent = policy.decide(
            job: JobInfo(), snapshot: Fixtures.onCellular, usage: usage, now: now, timeZone: Fixtures.berlin)
        #expect(spent.action == .pause && spent.rule == nil)
        #expect(
            spent.reasons.first
                == "budget cell is used up (6.03 MiB of 6.00 MiB today), resets 00:00 (in 2 h 12 m); rule `cell-allowance` would run"
        )
        #expect(spent.heldBy == "cell-allowance: budget cell is used up")
        #expect(spent.spentBudget?.name == "cell")
        // The explanation says the same first, and still lists the rule's own miss.
        let explained = policy.explain(
            job: JobInfo(), snapshot: Fixtures.onCellular, usage: usage, now: now, timeZone: Fixtures.berlin)
        #expect(explained.decision.reasons.first == spent.reasons.first)
        #expect(explained.misses.first?.why.contains { $0.hasPrefix("budget cell is used up") } == true)

        // A stricter rule matched (throttle): the budget is still why the job does not run at full speed.
        let small = policy.decide(
            job: JobInfo(size: 10), snapshot: Fixtures.onCellular, usage: usage, now: now, timeZone: Fixtures.berlin)
        #expect(small.rule == "small-anyway" && small.reasons.first?.hasPrefix("budget cell is used up") == true)

        // On Wi-Fi the budget rule would not match anyway (it wants metered): nothing blames the budget.
        let wifi = policy.decide(
            job: JobInfo(), snapshot: Fixtures.onWifi, usage: usage, now: now, timeZone: Fixtures.berlin)
        #expect(wifi.heldBy == nil && wifi.reasons.first?.contains("budget") == false)
    }

    /// Two rules held by spent budgets: the one whose budget resets first is named first (the job can
    /// move then), and both are named.
    @Test func theBudgetThatResetsFirstLeads() throws {
        let policy = try Fixtures.policy(
            """
            rules:
              - name: apt-weekly
                when: { metered: yes, tags: [apt] }
                action: run
                budget: { name: aptb, bytes: 1MiB, period: weekly, resets: "wed 05:30" }
              - name: cell-monthly
                when: { metered: yes }
                action: run
                budget: { name: mon, bytes: 1MiB, period: monthly, resets: "26 00:15" }
            """)
        let now = Fixtures.date("2026-11-25T23:11:00Z")  // a Wednesday; monthly resets in 1 h 4 m
        let zone = TimeZone(identifier: "UTC")!
        var usage = Usage()
        for rule in policy.rules {
            let key = try #require(rule.budget).key(at: now, calendar: Self.calendar(zone))
            usage.record(bytes: 2 << 20, budgetKey: key)
        }
        let decision = policy.decide(
            job: JobInfo(tags: ["apt"]), snapshot: Fixtures.onCellular, usage: usage, now: now, timeZone: zone)
        #expect(decision.action == .pause)
        #expect(
            decision.reasons.first?.hasPrefix(
                "budget mon is used up (2.00 MiB of 1.00 MiB this month), resets 00:15 (in 1 h 4 m)") == true,
            "\(decision.reasons)")
        #expect(decision.reasons.dropFirst().first?.hasPrefix("budget aptb is used up") == true, "\(decision.reasons)")
        #expect(decision.heldBy == "cell-monthly: budget mon is used up")
    }

    /// `per_user: yes`: each user has the whole allowance; one user's bytes (a job's owner's, or a report's
    /// asker's) never spend another's, and root's are counted apart too.
    @Test func aPerUserBudgetIsEachUsersOwn() throws {
        let policy = try Fixtures.policy(
            """
            rules:
              - name: cell-allowance
                when: { metered: yes }
                action: run
                budget: { name: cell, bytes: 6MiB, period: daily, per_user: yes }
            """)
        let now = Fixtures.date("2026-11-18T20:48:00Z")
        let alice = JobInfo(owner: 1000)
        let bob = JobInfo(owner: 1001)
        let root = JobInfo()
        var usage = Usage()
        let first = policy.decide(
            job: alice, snapshot: Fixtures.onCellular, usage: usage, now: now, timeZone: Fixtures.berlin)
        let key = try #require(first.budgetKey)
        #expect(key.hasSuffix("~1000") && first.rule == "cell-allowance")
        #expect(
            first.reasons.contains { $0.hasPrefix("budget cell (this user's share): 0 B of 6.00 MiB used") },
            "\(first.reasons)")
        usage.record(bytes: 7 << 20, budgetKey: key)
        let spent = policy.decide(
            job: alice, snapshot: Fixtures.onCellular, usage: usage, now: now, timeZone: Fixtures.berlin)
        #expect(
            spent.action == .pause
                && spent.reasons.first?.hasPrefix("budget cell is used up (7.00 MiB of 6.00 MiB today)") == true,
            "\(spent.reasons)")
        for other in [bob, root] {
            let decision = policy.decide(
                job: other, snapshot: Fixtures.onCellular, usage: usage, now: now, timeZone: Fixtures.berlin)
            #expect(decision.rule == "cell-allowance" && decision.budgetKey != key, "\(decision)")
        }
        #expect(
            policy.decide(job: root, snapshot: Fixtures.onCellular, usage: usage, now: now, timeZone: Fixtures.berlin)
                .budgetKey?.hasSuffix("~0") == true)
        // The explanation names the user's share too, and the period's end is still the next change.
        let explained = policy.explain(
            job: alice, snapshot: Fixtures.onCellular, usage: usage, now: now, timeZone: Fixtures.berlin)
        #expect(explained.misses.first?.why.first?.hasPrefix("budget cell is used up") == true)
        #expect(spent.nextChange == Fixtures.date("2026-11-18T23:00:00Z"))
    }

    static let spans: [(Double, String)] = [
        (59, "under a minute"), (60, "1 m"), (3 * 3600 + 12 * 60 + 5, "3 h 12 m"), (7200, "2 h"),
        (86_400 * 3 + 3600, "3 d 1 h"), (Double.infinity, "under a minute"), (-5, "under a minute"),
    ]

    @Test(arguments: spans)
    func spansAreShort(seconds: Double, text: String) {
        #expect(SpentBudget.span(seconds) == text)
    }
}
