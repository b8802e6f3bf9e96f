import ConfigKit
import Testing

@testable import Policy

@Suite struct ParserTests {
    @Test func readsEverySection() throws {
        let policy = try Fixtures.policy(
            """
            networks:
              - name: hotspot
                match: { kind: wlan, ssid: "AndroidAP*", driver: "iwl*", mac: "aa:bb:cc", subnet: 192.168.43.0/24, metered_hint: no, link: "wl*" }
                set: { metered: yes, labels: [hotspot, phone], roaming: no }
            defaults: { resume_after: 1m30s, throttle: 256KiB/s }
            rules:
              - name: night
                when: { metered: yes, kind: [wwan, ppp], labels: [cellular], link: "wwan*", roaming: no, days: [mon-fri, sun], time: ["22:00-06:00", "12:00-13:00"], size: "1MiB..20MiB", priority: ">= 2", tags: [os], allow_metered: yes, allow_roaming: no, budget_left: "> 10MiB" }
                throttle: 1MiB/s
                via: any
                budget: { name: cell, bytes: 500MiB, period: weekly, resets: "sat 03:30" }
            """)
        #expect(policy.networks.count == 1)
        #expect(policy.networks[0].match.macs.map(\.pattern) == ["aa:bb:cc:*"])
        #expect(policy.networks[0].effect == .init(metered: true, labels: ["hotspot", "phone"], roaming: false))
        #expect(policy.resumeAfter == .seconds(90))
        #expect(policy.defaults.action == .throttle && policy.defaults.rate == 256 * 1024)
        let rule = try #require(policy.rules.first)
        #expect(rule.action == .throttle && rule.rate == 1 << 20 && rule.via == .any)
        #expect(rule.when.windows.count == 2 && rule.when.windows[0].days == [1, 2, 3, 4, 5, 6])
        #expect(rule.when.size == Comparison(low: 1 << 20, high: 20 << 20, description: "1MiB..20MiB"))
        #expect(
            rule.budget == Budget(name: "cell", bytes: 500 << 20, period: .weekly, resetMinute: 210, resetWeekday: 7))
    }

    /// Each malformed snippet gives one issue at the given line and column, with a message and a hint.
    @Test(
        arguments: [
            ("version: 2\n", 1, 10, "unsupported policy version"),
            ("rules: []\n", 1, 1, "has no `version:`"),
            ("version: 1\nrulez: []\n", 2, 1, "unknown key `rulez`"),
            (
                "version: 1\nrules:\n  - name: a\n    action: run\n    wehn: { metered: no }\n", 5, 5,
                "unknown key `wehn`"
            ),
            ("version: 1\nrules:\n  - name: a\n    throttle: 5 MiBs\n", 4, 15, "bad rate"),
            ("version: 1\ndefaults: { resume_after: 5 sec }\n", 2, 27, "bad duration"),
            (
                "version: 1\nrules:\n  - name: a\n    action: run\n    when: { link: \"wl[an\" }\n", 5, 19,
                "bad link glob"
            ),
            (
                "version: 1\nrules:\n  - name: a\n    action: run\n    when: { time: \"25:00-03:00\" }\n", 5, 19,
                "bad time window"
            ),
            (
                "version: 1\nrules:\n  - name: a\n    action: run\n    when: { days: [mon, funday] }\n", 5, 25,
                "unknown day"
            ),
            ("version: 1\nrules:\n  - name: a\n    action: run\n    when: { kind: lte }\n", 5, 19, "unknown link kind"),
            ("version: 1\nrules:\n  - name: a\n    action: go\n", 4, 13, "unknown action"),
            ("version: 1\nrules:\n  - name: a\n", 3, 5, "has no action"),
            ("version: 1\nrules:\n  - action: run\n", 3, 5, "has no name"),
            ("version: 1\nrules:\n  - name: a\n    action: throttle\n", 4, 13, "needs a rate"),
            (
                "version: 1\nrules:\n  - name: a\n    action: run\n    when: { size: \"< big\" }\n", 5, 19,
                "bad size test"
            ),
            (
                "version: 1\nrules:\n  - name: a\n    action: run\n    budget: { bytes: 1GiB, period: yearly }\n", 5,
                36, "unknown budget period"
            ),
            (
                "version: 1\nrules:\n  - name: a\n    action: run\n    budget: { bytes: 1GiB, period: monthly, resets: 31 }\n",
                5, 53, "bad `resets: 31`"
            ),
            (
                "version: 1\nrules:\n  - name: a\n    action: run\n    when: { budget_left: \"> 0\" }\n", 5, 26,
                "has none"
            ),
            (
                "version: 1\nnetworks:\n  - name: n\n    match: { subnet: 10.0.0.0/33 }\n    set: { metered: no }\n", 4,
                22, "bad subnet"
            ),
            (
                "version: 1\nnetworks:\n  - name: n\n    match: { mac: \"zz:00\" }\n    set: { metered: no }\n", 4, 19,
                "bad MAC"
            ),
            ("version: 1\nnetworks:\n  - name: n\n    match: { kind: wlan }\n", 3, 5, "has no `set:`"),
            (
                "version: 1\nrules:\n  - name: a\n    action: run\n  - name: a\n    action: pause\n", 5, 5,
                "two entries named `a`"
            ),
            ("version: 1\nrules: [\n", 3, 1, "YAML syntax"),
        ] as [(String, Int, Int, String)])
    func locatesEveryError(yaml: String, line: Int, column: Int, message: String) {
        let issues = Fixtures.issues(yaml)
        #expect(issues.count == 1, "\(issues)")
        let issue = issues.first
        #expect(issue?.file == "bad.yaml")
        #expect(issue?.line == line, "\(issues)")
        #expect(issue?.column == column, "\(issues)")
        #expect(issue?.message.contains(message) == true, "\(issues)")
        #expect(issue?.hint != nil || message == "YAML syntax", "\(issues)")
    }

    @Test func suggestsTheKeyMeant() {
        let issues = Fixtures.issues("version: 1\ndefaults: { resume_afer: 5s }\n")
        #expect(issues.first?.hint?.contains("did you mean `resume_after`?") == true)
    }

    @Test func reportsEveryErrorNotOnlyTheFirst() {
        let issues = Fixtures.issues(
            """
            version: 1
            rules:
              - name: a
                throttle: fast
                when: { time: "9-5", kind: lte }
              - name: b
                action: run
                via: "wl*"
            """)
        #expect(issues.map(\.line) == [4, 5, 5, 8], "\(issues)")
    }

    @Test func reportsErrorsFromEveryFile() {
        do {
            _ = try PolicySet.parse(files: [
                ("10-a.yaml", "version: 1\nfoo: 1\n"), ("20-b.yaml", "version: 1\nbar: 2\n"),
            ])
            Issue.record("expected an error")
        } catch {
            #expect(error.issues.map(\.file) == ["10-a.yaml", "20-b.yaml"])
            #expect(error.description.contains("10-a.yaml:2:1: unknown key `foo`"))
        }
    }
}
