import Foundation
import Links
import PropertyBased
import TestSupport
import Testing

@testable import Policy

/// Random links, jobs, instants and policies: `decide` is total and deterministic, and a metered primary
/// never gives `run` or `throttle` unless the matched rule explicitly allows metered links.
@Suite struct PropertyTests {
    static let policies: [PolicySet] = {
        let whens = [
            "{}", "{ metered: no }", "{ metered: yes }", "{ kind: wwan }", "{ size: \"< 20MiB\" }",
            "{ time: \"22:00-06:00\" }", "{ allow_metered: yes }", "{ labels: [hotspot] }", "{ priority: \">= 3\" }",
        ]
        let actions = [
            "action: run", "action: pause", "throttle: 1MiB/s", "action: run\n    via: any",
            "action: run\n    via: wwan0", "throttle: 64KiB/s\n    budget: { bytes: 10MiB, period: daily }",
        ]
        var result: [PolicySet] = []
        var rng = SplitMix(seed: 7)
        for _ in 0..<40 {
            var text = "version: 1\ndefaults: { action: \(rng.next() % 2 == 0 ? "run" : "pause") }\n"
            text +=
                "networks:\n  - name: hotspot\n    match: { ssid: \"Android*\" }\n    set: { metered: yes, labels: [hotspot] }\nrules:\n"
            for i in 0..<Int(rng.next() % 5) {
                text += "  - name: r\(i)\n    when: \(whens[Int(rng.next() % UInt64(whens.count))])\n"
                text += "    \(actions[Int(rng.next() % UInt64(actions.count))])\n"
            }
            result.append(try! PolicySet.parse(files: [("gen.yaml", text)]))
        }
        return result
    }()

    static func snapshot(_ bits: Int) -> LinkSnapshot {
        let kinds: [LinkKind] = [.wlan, .wwan, .ethernet, .usbTether, .bluetooth]
        var links: [Link] = []
        for i in 0..<3 {
            let up = (bits >> i) & 1 == 1
            let kind = kinds[(bits >> (3 + i * 2)) % kinds.count]
            let hint: Bool? = (bits >> (10 + i)) & 3 == 0 ? nil : (bits >> (12 + i)) & 1 == 1
            links.append(
                Fixtures.link(
                    ["wlan0", "wwan0", "eth0"][i], kind, index: i + 2, up: up,
                    ssid: (bits >> 16) & 1 == 1 ? "AndroidAP12" : "Home", hint: hint))
        }
        let primary = ["wlan0", "wwan0", "eth0", "none"][(bits >> 18) % 4]
        return Fixtures.snapshot(links, primary: primary)
    }

    @Test func decideIsTotalDeterministicAndSafe() async {
        await propertyCheck(
            count: 2000, input: Gen.int(in: 0...Int(Int32.max)), Gen.int(in: 0...39),
            Gen.int64(in: 1_700_000_000...1_900_000_000)
        ) { bits, policyIndex, seconds in
            let policy = Self.policies[policyIndex]
            let snapshot = Self.snapshot(bits)
            let job = JobInfo(
                id: "j", size: bits % 3 == 0 ? nil : Int64(bits % 50) << 20, priority: bits % 5,
                tags: [], allowMetered: bits % 7 == 0, allowRoaming: nil)
            var usage = Usage()
            let now = Date(timeIntervalSince1970: TimeInterval(seconds))
            let zone = bits % 2 == 0 ? Fixtures.berlin : Fixtures.utc
            let first = policy.decide(job: job, snapshot: snapshot, usage: usage, now: now, timeZone: zone)
            usage.record(bytes: Int64(bits % 20) << 20, decision: first)
            let a = policy.decide(job: job, snapshot: snapshot, usage: usage, now: now, timeZone: zone)
            let b = policy.decide(job: job, snapshot: snapshot, usage: usage, now: now, timeZone: zone)
            #expect(a == b)
            if let next = a.nextChange { #expect(next > now) }
            if a.action == .pause {
                #expect(a.allowedLinks.isEmpty && a.rate == nil)
            } else {
                #expect(!a.allowedLinks.isEmpty)
            }
            if a.action == .throttle { #expect(a.rate != nil) }
            if let primary = snapshot.primary, policy.classify(link: primary).metered, a.action != .pause {
                let rule = policy.rules.first { $0.name == a.rule }
                #expect(rule?.allowsMetered == true, "metered \(primary.name) ran under \(a.rule ?? "defaults")")
            }
        }
    }
}
