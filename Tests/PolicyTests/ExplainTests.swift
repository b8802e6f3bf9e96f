import Foundation
import Testing
@testable import Policy

@Suite struct ExplainTests {
    let policy: PolicySet

    init() throws {
        policy = try PolicySet.parse(files: [("p.yaml", """
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
            """)])
    }

    @Test func textShowsDecisionRuleAndEveryEarlierMiss() {
        let e = policy.explain(job: JobInfo(size: 700 << 20), snapshot: Fixtures.onCellular, usage: Usage(),
                               now: Fixtures.noon, timeZone: Fixtures.utc)
        #expect(e.text == """
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
        let e = policy.explain(job: JobInfo(), snapshot: Fixtures.none, usage: Usage(), now: Fixtures.noon,
                               timeZone: Fixtures.utc)
        #expect(e.decision.rule == nil && e.decision.action == .pause)
        #expect(e.text.contains("decision: pause (no rule matched: defaults)"))
        #expect(e.text.contains("rules tried (none matched):"))
        #expect(e.misses.count == 3)
        #expect(e.text.contains("there is no primary uplink to test"))
    }

    @Test func json() throws {
        let e = policy.explain(job: JobInfo(size: 1 << 20), snapshot: Fixtures.onCellular, usage: Usage(),
                               now: Fixtures.noon, timeZone: Fixtures.utc)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(e.json().utf8)) as? [String: Any])
        #expect(object["action"] as? String == "run")
        #expect(object["rule"] as? String == "small-on-metered")
        #expect(object["rate"] is NSNull)
        #expect((object["reasons"] as? [String])?.first == "rule `small-on-metered` matched: metered is yes, size 1.00 MiB is < 20MiB")
        #expect((object["skipped"] as? [[String: Any]])?.first?["rule"] as? String == "run-unmetered")
        #expect(object["metered"] as? Bool == true)
    }
}
