import Foundation
import Links
import Testing

@testable import Policy

@Suite struct ActionTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var rule: String
        var snapshot: String
        var action: Action
        var rate: Int64? = nil
        var links: [String]
        var rule_: String?
        var testDescription: String { "\(rule) on \(snapshot)" }
    }

    static let cases: [Case] = [
        Case(rule: "action: run", snapshot: "wifi", action: .run, links: ["wlan0"], rule_: "r"),
        Case(rule: "action: pause", snapshot: "wifi", action: .pause, links: [], rule_: "r"),
        Case(
            rule: "throttle: 512KiB/s", snapshot: "wifi", action: .throttle, rate: 512 * 1024, links: ["wlan0"],
            rule_: "r"),
        // A rule that does not allow metered links is skipped on a metered primary: the default pauses.
        Case(rule: "action: run", snapshot: "cell", action: .pause, links: [], rule_: nil),
        Case(rule: "throttle: 1MiB/s", snapshot: "cell", action: .pause, links: [], rule_: nil),
        Case(rule: "action: run\n    via: any", snapshot: "cell", action: .run, links: ["wwan0"], rule_: "r"),
        Case(rule: "action: run\n    via: wwan0", snapshot: "both", action: .run, links: ["wwan0"], rule_: "r"),
        Case(rule: "action: run\n    via: any", snapshot: "both", action: .run, links: ["wwan0", "wlan0"], rule_: "r"),
        Case(rule: "action: run\n    via: eth0", snapshot: "both", action: .pause, links: [], rule_: nil),
        Case(
            rule: "action: run\n    when: { metered: yes }", snapshot: "cell", action: .run, links: ["wwan0"],
            rule_: "r"),
        // metered: yes but via unmetered: only wlan0 may carry bytes.
        Case(
            rule: "action: run\n    when: { metered: yes }\n    via: unmetered", snapshot: "both", action: .run,
            links: ["wlan0"], rule_: "r"),
        Case(
            rule: "action: run\n    when: { allow_metered: yes }", snapshot: "cell", action: .run, links: ["wwan0"],
            rule_: "r"),
        Case(rule: "action: run", snapshot: "none", action: .pause, links: [], rule_: nil),
    ]

    @Test(arguments: cases)
    func action(_ c: Case) throws {
        let policy = try Fixtures.policy("defaults: { action: run }\nrules:\n  - name: r\n    \(c.rule)\n")
        let snapshot =
            switch c.snapshot {
            case "wifi": Fixtures.onWifi
            case "cell": Fixtures.onCellular
            case "both": Fixtures.both
            default: Fixtures.none
            }
        let d = policy.decide(
            job: JobInfo(id: "j", allowMetered: true), snapshot: snapshot, usage: Usage(),
            now: Fixtures.noon, timeZone: Fixtures.utc)
        #expect(d.action == c.action, "\(d.reasons)")
        #expect(d.rate == c.rate)
        #expect(d.allowedLinks == c.links)
        #expect(d.rule == c.rule_)
    }

    @Test func firstMatchWins() throws {
        let policy = try Fixtures.policy(
            """
            rules:
              - name: small
                when: { size: "< 1MiB" }
                action: run
              - name: unmetered
                when: { metered: no }
                throttle: 1MiB/s
              - name: everything
                action: pause
            """)
        func rule(_ size: Int64?, _ snapshot: LinkSnapshot) -> String? {
            policy.decide(
                job: JobInfo(size: size), snapshot: snapshot, usage: Usage(), now: Fixtures.noon,
                timeZone: Fixtures.utc
            ).rule
        }
        #expect(rule(1000, Fixtures.onWifi) == "small")
        #expect(rule(5 << 20, Fixtures.onWifi) == "unmetered")
        #expect(rule(1000, Fixtures.onCellular) == "everything")  // `small` does not allow metered links
        #expect(rule(nil, Fixtures.onCellular) == "everything")
    }

    @Test func defaultsApplyWhenNothingMatches() throws {
        let pausing = try Fixtures.policy("defaults: { action: pause }\n")
        #expect(
            pausing.decide(
                job: JobInfo(), snapshot: Fixtures.onWifi, usage: Usage(), now: Fixtures.noon,
                timeZone: Fixtures.utc
            ).action == .pause)
        let throttling = try Fixtures.policy("defaults: { throttle: 2MiB/s }\n")
        let d = throttling.decide(
            job: JobInfo(), snapshot: Fixtures.both, usage: Usage(), now: Fixtures.noon, timeZone: Fixtures.utc)
        #expect(d.action == .pause)  // the default never uses a metered primary
        let d2 = throttling.decide(
            job: JobInfo(), snapshot: Fixtures.onWifi, usage: Usage(), now: Fixtures.noon, timeZone: Fixtures.utc)
        #expect(d2.action == .throttle && d2.rate == 2 << 20 && d2.rule == nil)
    }
}
