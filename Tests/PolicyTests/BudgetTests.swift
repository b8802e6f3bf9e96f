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
}
