import Foundation
import Testing

@testable import Policy

@Suite struct ExplainTests {
    let policy: PolicySet

    init() throws {
        policy = try PolicySet.parse(files: [
            (
                "p.yaml",
                """
                version: 1
                defaults: { action: pause }
                rules:
                  - name: run-unmetered
                    when: { metered: no }
                    action: run
                  - name: small-on-metered
                    when: { metered: yes, size: "< 20MiB" }
                    action: run
                  - name: pause-metered
                    when: { metered: yes }
                    action: pause
                """
            )
        ])
    }

    @Test func textShowsDecisionRuleAndEveryEarlierMiss() {
        let e = policy.explain(
            job: JobInfo(size: 700 << 20), snapshot: Fixtures.onCellular, usage: Usage(),
            now: Fixtures.noon, timeZone: Fixtures.utc)
        #expect(
            e.text == """
                decision: pause (rule `pause-metered`)
                at: 2026-11-18 12:00 GMT
                why:
                  - rule `pause-metered` matched: metered is yes
                  - primary uplink wwan0 (wwan) is metered: kind wwan is metered by default
                rules tried before it:
                  run-unmetered (p.yaml:4)
                    - wwan0 is metered, the rule wants metered: no
                  small-on-metered (p.yaml:7)
                    - size 700.0 MiB is not < 20MiB
                """)
    }

    @Test func textWhenTheDefaultApplies() {
        let e = policy.explain(
            job: JobInfo(), snapshot: Fixtures.none, usage: Usage(), now: Fixtures.noon,
            timeZone: Fixtures.utc)
        #expect(e.decision.rule == nil && e.decision.action == .pause)
        #expect(e.text.contains("decision: pause (no rule matched: defaults)"))
        #expect(e.text.contains("rules tried (none matched):"))
        #expect(e.misses.count == 3)
        #expect(e.text.contains("there is no primary uplink to test"))
    }

    @Test func json() throws {
        let e = policy.explain(
            job: JobInfo(size: 1 << 20), snapshot: Fixtures.onCellular, usage: Usage(),
            now: Fixtures.noon, timeZone: Fixtures.utc)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(e.json().utf8)) as? [String: Any])
        #expect(object["action"] as? String == "run")
        #expect(object["rule"] as? String == "small-on-metered")
        #expect(object["rate"] is NSNull)
        #expect(
            (object["reasons"] as? [String])?.first
                == "rule `small-on-metered` matched: metered is yes, size 1.00 MiB is < 20MiB")
        #expect((object["skipped"] as? [[String: Any]])?.first?["rule"] as? String == "run-unmetered")
        #expect(object["metered"] as? Bool == true)
    }
}

@Suite struct ExplainNextChangeTests {
    @Test func textShowsTheNextChangeInLocalTime() throws {
        let policy = try PolicySet.load(path: Fixtures.repoRoot() + "/policies/edge-device.yaml")
        let e = policy.explain(
            job: JobInfo(), snapshot: Fixtures.onCellular, usage: Usage(),
            now: Fixtures.date("2026-11-18T01:30:00Z"), timeZone: Fixtures.berlin)
        #expect(e.decision.action == .throttle)
        #expect(
            e.text.hasPrefix("decision: throttle at 1.00 MiB/s (rule `cellular-at-night`)\nat: 2026-11-18 02:30 GMT+1"))
        #expect(e.text.contains("next change by time: 2026-11-18 05:00 GMT+1"))
        #expect(
            e.text.contains("budget cellular: 0 B of 500.0 MiB used this monthly period, resets 2026-12-01 00:00 GMT+1")
        )
        #expect(
            e.text.contains(
                "  ethernet-always (\(Fixtures.repoRoot())/policies/edge-device.yaml:19)\n    - wwan0 is kind wwan, not ethernet"
            ))
        #expect(e.misses.map(\.why.count) == [1])
    }
}
