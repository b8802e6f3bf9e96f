import Foundation
import Links
import Testing

@testable import Policy

/// `prefer:` on rules (docs/mirrors.md): the decision carries which of a job's sources take its work first;
/// and `admits`: a link without a default route (a LAN a source sits on) is judged by the rule's `via`.
@Suite struct PreferTests {
    func decide(_ yaml: String, snapshot: LinkSnapshot = Fixtures.onWifi) throws -> Decision {
        try Fixtures.policy(yaml).decide(
            job: JobInfo(id: "j"), snapshot: snapshot, usage: Usage(), now: Fixtures.noon, timeZone: Fixtures.utc)
    }

    @Test func aRuleSaysWhichSourcesItPrefers() throws {
        let lan = try decide("rules:\n  - name: r\n    action: run\n    prefer: lan\n")
        #expect(lan.prefer == .lan)
        let hosts = try decide("rules:\n  - name: r\n    action: run\n    prefer: [Cache.LAN, \"10.0.0.*\"]\n")
        guard case .hosts(let globs)? = hosts.prefer else {
            Issue.record("not hosts: \(String(describing: hosts.prefer))")
            return
        }
        #expect(globs.map(\.pattern) == ["cache.lan", "10.0.0.*"])
        #expect(hosts.prefer?.listsHost("CACHE.lan") == true)
        #expect(hosts.prefer?.listsHost("10.0.0.7") == true)
        #expect(hosts.prefer?.listsHost("mirror.example") == false)
        #expect(SourcePreference.lan.listsHost("cache.lan") == false)
        #expect(try decide("rules:\n  - name: r\n    action: run\n    prefer: LAN\n").prefer == .lan)
        let one = try decide("rules:\n  - name: r\n    action: run\n    prefer: cache.lan\n")
        #expect(one.prefer?.listsHost("cache.lan") == true)
        // No `prefer`, a pause, or the defaults: none.
        #expect(try decide("rules:\n  - name: r\n    action: run\n").prefer == nil)
        #expect(try decide("rules:\n  - name: r\n    action: pause\n    prefer: lan\n").prefer == nil)
        #expect(try decide("defaults: { action: run }\n").prefer == nil)
    }

    @Test(arguments: [
        ("prefer: [lan, cache]", 4, "`lan` goes alone"),
        ("prefer: \"\"", 4, "bad host"),
        ("prefer: [\"http://cache/\"]", 4, "bad host"),
        ("prefer: [\"[x\"]", 4, "bad prefer glob"),
        ("prefer: { lan: yes }", 4, "prefer is `lan` or a list of hosts"),
        ("prefer: []", 4, "lists no host"),
        ("prefer: [[a]]", 4, "one name, address or glob"),
        ("prefer: 42", 4, "a number is not a host"),
        ("prefer: true", 4, "yes/no or null"),
        ("prefer: [null]", 4, "yes/no or null"),
        ("prefer: [\"cache.lan:8080\"]", 4, "without its port"),
        ("prefer: .inf", 4, "no empty label"),
        ("prefer: [cache..lan]", 4, "no empty label"),
        ("prefer: \"a\\u0000b\"", 4, "control characters"),
    ])
    func aBadPreferenceIsAnErrorAtItsLine(line: String, at: Int, says: String) throws {
        let issues = Fixtures.issues("rules:\n  - name: r\n    action: run\n    \(line)\n")
        let issue = try #require(issues.first)
        #expect(issue.line == at)
        #expect(issue.message.contains(says), "\(issue.message)")
        #expect(issue.hint != nil, "\(issue.message) has no hint")
    }

    @Test func aLinkWithoutADefaultRouteIsAdmittedAsTheRulesViaSays() throws {
        // eth0 is up with no default route: the uplinks are wlan0 (unmetered) and wwan0 (metered).
        var snapshot = Fixtures.snapshot([Fixtures.wlan, Fixtures.wwan], primary: "wlan0")
        snapshot.links.append(Fixtures.eth)
        let yaml = """
            networks:
              - { name: metered-lan, match: { link: eth1 }, set: { metered: yes } }
            rules:
              - { name: home, when: { metered: no }, action: run }
            """
        let policy = try Fixtures.policy(yaml)
        let decision = policy.decide(
            job: JobInfo(id: "j"), snapshot: snapshot, usage: Usage(), now: Fixtures.noon, timeZone: Fixtures.utc)
        #expect(decision.allowedLinks == ["wlan0"])
        #expect(policy.admits(Fixtures.eth, under: decision))
        // An uplink only as the decision says; a metered LAN not under `via: unmetered`; nothing under a pause.
        #expect(!policy.admits(Fixtures.wwan, under: decision))
        var meteredLAN = Fixtures.eth
        meteredLAN.name = "eth1"
        #expect(!policy.admits(meteredLAN, under: decision))
        #expect(!policy.admits(Fixtures.eth, under: Decision(action: .pause, rule: "home")))
        let named = Decision(action: .run, allowedLinks: ["wlan0"], rule: "lan")
        let byName = try Fixtures.policy("rules:\n  - { name: lan, action: run, via: eth1 }\n")
        #expect(byName.admits(meteredLAN, under: named))
        #expect(!byName.admits(Fixtures.eth, under: named))
    }
}
