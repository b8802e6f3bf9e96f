import Foundation
import Testing

@testable import Policy

@Suite struct TimeWindowTests {
    static func decide(_ policy: PolicySet, at: String, zone: TimeZone) -> Decision {
        policy.decide(job: JobInfo(), snapshot: Fixtures.onWifi, usage: Usage(), now: Fixtures.date(at), timeZone: zone)
    }

    /// A window that wraps midnight belongs to the day it starts on. 2026-11-20 is a Friday.
    @Test(arguments: [
        ("2026-11-20T23:00:00Z", true),  // Friday 23:00
        ("2026-11-21T05:59:00Z", true),  // Saturday 05:59, still Friday's window
        ("2026-11-21T06:00:00Z", false),  // end excluded
        ("2026-11-21T23:00:00Z", false),  // Saturday's window does not exist
        ("2026-11-20T05:00:00Z", false),  // Thursday's window does not exist
        ("2026-11-20T21:59:00Z", false),
    ])
    func wrapsMidnight(at: String, inside: Bool) throws {
        let policy = try Fixtures.policy(
            "rules:\n  - name: night\n    when: { days: fri, time: \"22:00-06:00\" }\n    action: pause\n")
        #expect((Self.decide(policy, at: at, zone: Fixtures.utc).rule == "night") == inside)
    }

    /// 01:00-05:00 in Europe/Berlin on the day DST starts (2026-03-29, 02:00 CET -> 03:00 CEST) and ends
    /// (2026-10-25, 03:00 CEST -> 02:00 CET): the window keeps its wall-clock hours.
    @Test(arguments: [
        ("2026-03-28T23:30:00Z", false, "2026-03-29T00:00:00Z"),  // 00:30 CET -> opens at 01:00 CET
        ("2026-03-29T00:30:00Z", true, "2026-03-29T03:00:00Z"),  // 01:30 CET -> closes 05:00 CEST, 3 real hours later
        ("2026-03-29T02:30:00Z", true, "2026-03-29T03:00:00Z"),  // 04:30 CEST
        ("2026-03-29T03:00:00Z", false, "2026-03-29T23:00:00Z"),  // 05:00 CEST -> opens tomorrow 01:00 CEST
        ("2026-10-24T23:30:00Z", true, "2026-10-25T04:00:00Z"),  // 01:30 CEST -> closes 05:00 CET, 5 real hours
        ("2026-10-25T03:30:00Z", true, "2026-10-25T04:00:00Z"),  // 04:30 CET
    ])
    func keepsLocalHoursAcrossDST(at: String, inside: Bool, next: String) throws {
        let policy = try Fixtures.policy(
            "rules:\n  - name: night\n    when: { time: \"01:00-05:00\" }\n    action: pause\n")
        let d = Self.decide(policy, at: at, zone: Fixtures.berlin)
        #expect((d.rule == "night") == inside)
        #expect(d.nextChange == Fixtures.date(next))
    }

    @Test(
        arguments: [
            ("mon-fri", Set([2, 3, 4, 5, 6])), ("fri-mon", [6, 7, 1, 2]), ("weekend", [1, 7]), ("Sunday", [1]),
            ("daily", Set(1...7)),
        ] as [(String, Set<Int>)])
    func parsesDays(text: String, days: Set<Int>) {
        #expect(TimeWindow.parseDays(text) == days)
    }

    @Test(arguments: ["24:00-01:00", "1:00", "01:60-02:00", "03:00-03:00", "aa:bb-cc:dd", "01:00-"])
    func rejectsBadHours(text: String) {
        #expect(TimeWindow.parseHours(text) == nil)
    }

    @Test func noWindowNoNextChange() throws {
        let policy = try Fixtures.policy("rules:\n  - name: r\n    when: { metered: no }\n    action: run\n")
        #expect(Self.decide(policy, at: "2026-11-20T23:00:00Z", zone: Fixtures.utc).nextChange == nil)
    }

    /// With days, the next change skips the days without a window.
    @Test(arguments: [
        ("2026-11-18T12:00:00Z", "2026-11-20T22:00:00Z"),  // Wednesday noon -> Friday 22:00
        ("2026-11-20T23:00:00Z", "2026-11-21T06:00:00Z"),  // inside Friday's window -> Saturday 06:00
        ("2026-11-21T06:00:00Z", "2026-11-27T22:00:00Z"),  // after it -> next Friday
    ])
    func nextChangeSkipsOtherDays(at: String, next: String) throws {
        let policy = try Fixtures.policy(
            "rules:\n  - name: night\n    when: { days: fri, time: \"22:00-06:00\" }\n    action: pause\n")
        #expect(Self.decide(policy, at: at, zone: Fixtures.utc).nextChange == Fixtures.date(next))
    }
}
