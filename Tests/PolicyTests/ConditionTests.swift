import Foundation
import Links
import Testing

@testable import Policy

/// Every `when:` test, alone, on a pause rule in front of a default `run`: the rule matches or it does not.
@Suite struct ConditionTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var when: String
        var link: String = "wifi"
        var job = JobInfo(id: "j")
        var at = "2026-11-18T12:00:00Z"  // Wednesday noon UTC
        var usedBytes: Int64 = 0
        var matches: Bool
        var testDescription: String { "\(when) on \(link) -> \(matches)" }
    }

    static let cases: [Case] = [
        Case(when: "metered: no", matches: true),
        Case(when: "metered: yes", matches: false),
        Case(when: "metered: yes", link: "cell", matches: true),
        Case(when: "kind: wlan", matches: true),
        Case(when: "kind: [wwan, ethernet]", matches: false),
        Case(when: "labels: [home]", matches: true),
        Case(when: "labels: [home, office]", matches: false),
        Case(when: "link: \"wlan*\"", matches: true),
        Case(when: "link: [eth0, \"wwan?\"]", matches: false),
        Case(when: "roaming: no", matches: true),
        Case(when: "roaming: yes", link: "cell", matches: true),
        Case(when: "time: \"11:00-13:00\"", matches: true),
        Case(when: "time: \"13:00-11:00\"", matches: false),
        Case(when: "days: [wed]", matches: true),
        Case(when: "days: weekend", matches: false),
        Case(when: "days: mon-fri, time: \"12:00-12:01\"", matches: true),
        Case(when: "size: \"< 20MiB\"", job: JobInfo(size: 19 << 20), matches: true),
        Case(when: "size: \"< 20MiB\"", job: JobInfo(size: 20 << 20), matches: false),
        Case(when: "size: \"< 20MiB\"", job: JobInfo(size: nil), matches: false),
        Case(when: "size: \">= 1GiB\"", job: JobInfo(size: 1 << 30), matches: true),
        Case(when: "size: \"1MiB..2MiB\"", job: JobInfo(size: 2 << 20), matches: false),
        Case(when: "priority: \">= 5\"", job: JobInfo(priority: 5), matches: true),
        Case(when: "priority: 3", job: JobInfo(priority: 4), matches: false),
        Case(when: "tags: [os, urgent]", job: JobInfo(tags: ["urgent", "os", "x"]), matches: true),
        Case(when: "tags: [urgent]", job: JobInfo(tags: ["os"]), matches: false),
        Case(when: "allow_metered: yes", job: JobInfo(allowMetered: true), matches: true),
        Case(when: "allow_metered: yes", job: JobInfo(allowMetered: false), matches: false),
        Case(when: "allow_roaming: no", job: JobInfo(allowRoaming: nil), matches: true),
        Case(when: "allow_roaming: yes", job: JobInfo(allowRoaming: true), matches: true),
        Case(when: "budget_left: \"> 100MiB\"", usedBytes: 0, matches: true),
        Case(when: "budget_left: \"> 100MiB\"", usedBytes: 950 << 20, matches: false),
        Case(when: "{}", usedBytes: 1 << 30, matches: false),  // an exhausted budget never matches
        Case(when: "metered: no", link: "none", matches: false),
    ]

    @Test(arguments: cases)
    func condition(_ c: Case) throws {
        let policy = try Fixtures.policy(
            """
            networks:
              - name: home
                match: { ssid: "Home*" }
                set: { labels: [home] }
              - name: abroad
                match: { kind: wwan }
                set: { roaming: yes }
            defaults: { action: run }
            rules:
              - name: r
                when: { \(c.when.hasPrefix("{") ? "" : c.when) }
                action: pause
                budget: { bytes: 1GiB, period: daily }
            """)
        let snapshot =
            switch c.link {
            case "wifi": Fixtures.onWifi
            case "cell": Fixtures.onCellular
            default: Fixtures.none
            }
        let now = Fixtures.date(c.at)
        var usage = Usage()
        let key = policy.rules[0].budget!.key(at: now, calendar: calendar)
        usage.record(bytes: c.usedBytes, budgetKey: key)
        let decision = policy.decide(job: c.job, snapshot: snapshot, usage: usage, now: now, timeZone: Fixtures.utc)
        #expect((decision.rule == "r") == c.matches, "\(decision.reasons)")
    }

    var calendar: Calendar {
        var c = Calendar(identifier: .gregorian)
        c.timeZone = Fixtures.utc
        return c
    }
}
