import Foundation
import Links
import Testing

@testable import Policy

/// Loads and evaluates every file in policies/, and checks what each promises in its comments.
@Suite struct ShippedPoliciesTests {
    static let root = Fixtures.repoRoot() + "/policies"

    static var files: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).filter { $0.hasSuffix(".yaml") }.sorted()
    }

    @Test(arguments: files)
    func loadsAndEvaluates(file: String) throws {
        let policy = try PolicySet.load(path: Self.root + "/" + file)
        for snapshot in [Fixtures.onWifi, Fixtures.onCellular, Fixtures.both, Fixtures.none] {
            for size: Int64? in [nil, 1 << 20, 700 << 20] {
                let d = policy.decide(
                    job: JobInfo(size: size), snapshot: snapshot, usage: Usage(), now: Fixtures.noon,
                    timeZone: Fixtures.berlin)
                if snapshot.primary?.kind == .wwan, size == 700 << 20 { #expect(d.action == .pause, "\(file)") }
                if snapshot.primary == nil { #expect(d.action == .pause) }
            }
        }
    }

    @Test func theWholeDirectoryLoads() throws {
        #expect(Self.files == ["default.yaml", "edge-device.yaml", "laptop.yaml"])
        _ = try PolicySet.load(path: Self.root)
    }

    func decide(
        _ file: String, _ snapshot: LinkSnapshot, size: Int64? = 700 << 20, at: String = "2026-11-18T12:00:00Z",
        usage: Usage = Usage()
    ) throws -> Decision {
        try PolicySet.load(path: Self.root + "/" + file).decide(
            job: JobInfo(size: size), snapshot: snapshot, usage: usage, now: Fixtures.date(at),
            timeZone: Fixtures.berlin)
    }

    @Test func defaultRunsUnmeteredPausesMetered() throws {
        let policy = try PolicySet.load(path: Self.root + "/default.yaml")
        #expect(policy.resumeAfter == .seconds(5))
        #expect(try decide("default.yaml", Fixtures.onWifi).action == .run)
        #expect(try decide("default.yaml", Fixtures.onCellular).rule == "pause-metered")
    }

    @Test func laptopHotspotsAreMeteredSmallFilesMayUseThem() throws {
        let hotspot = Fixtures.snapshot([Fixtures.link("wlan0", .wlan, ssid: "AndroidAP_4411")], primary: "wlan0")
        #expect(try decide("laptop.yaml", hotspot).action == .pause)
        #expect(try decide("laptop.yaml", hotspot, size: 5 << 20).action == .run)
        #expect(try decide("laptop.yaml", Fixtures.onCellular, size: 19 << 20).rule == "small-files-on-metered")
        #expect(try decide("laptop.yaml", Fixtures.onCellular, size: nil).rule == "everything-else-waits")
        #expect(try decide("laptop.yaml", Fixtures.onWifi).rule == "unmetered")
    }

    /// Large files wait on battery below 30 % or in power-saver; AC, a fuller battery, a small file, or a
    /// machine whose power nobody reports (an edge device) go on (issue 25, part 3).
    @Test func laptopLargeFilesWaitOnLowBatteryOrPowerSaver() throws {
        func wifi(_ power: PowerFacts) -> LinkSnapshot {
            var snapshot = Fixtures.onWifi
            snapshot.power = power
            return snapshot
        }
        let low = wifi(
            PowerFacts(onBattery: true, batteryPercent: 18, batteryState: "discharging", sources: ["upower"]))
        let paused = try decide("laptop.yaml", low)
        #expect(paused.action == .pause)
        #expect(paused.rule == "large-files-on-low-battery")
        #expect(
            paused.reasons.first
                == "rule `large-files-on-low-battery` matched: power is battery (upower), battery 18% is < 30% (upower), size 700.0 MiB is > 100MiB"
                || paused.reasons.first?.contains("battery 18% is < 30% (upower)") == true, "\(paused.reasons)")
        #expect(try decide("laptop.yaml", low, size: 50 << 20).rule == "unmetered")
        #expect(try decide("laptop.yaml", wifi(PowerFacts(onBattery: true, batteryPercent: 30))).rule == "unmetered")
        #expect(try decide("laptop.yaml", wifi(PowerFacts(onBattery: false, batteryPercent: 18))).rule == "unmetered")
        let saver = try decide("laptop.yaml", wifi(PowerFacts(onBattery: false, profile: "power-saver")))
        #expect(saver.rule == "large-files-in-power-saver")
        #expect(try decide("laptop.yaml", wifi(PowerFacts(profile: "balanced"))).rule == "unmetered")
        // Nobody reports power: nothing is held.
        #expect(try decide("laptop.yaml", Fixtures.onWifi).rule == "unmetered")
        let explained = try PolicySet.load(path: Self.root + "/laptop.yaml").explain(
            job: JobInfo(size: 700 << 20), snapshot: Fixtures.onWifi, usage: Usage(), now: Fixtures.noon,
            timeZone: Fixtures.berlin)
        #expect(explained.misses.first?.why.first == "the power supply is unknown (no UPower)")
    }

    @Test func powerTestsParseAndRefuseNonsense() throws {
        let policy = try Fixtures.policy(
            "rules:\n  - { name: r, when: { power: ac, battery: \">= 50%\", power_saver: no }, action: run }\n")
        #expect(policy.rules[0].when.onBattery == false)
        #expect(policy.rules[0].when.battery?.matches(50) == true && policy.rules[0].when.battery?.matches(49) == false)
        #expect(policy.rules[0].when.powerSaver == false)
        for bad in ["power: mains", "battery: \"< 130%\"", "battery: low", "power_saver: maybe"] {
            let issues = Fixtures.issues("rules:\n  - name: r\n    when: { \(bad) }\n    action: run\n")
            #expect(issues.contains { $0.line == 3 }, "\(bad): \(issues)")
        }
    }

    @Test func edgeDeviceCellularAtNightWithinBudgetEthernetAlways() throws {
        let eth = Fixtures.snapshot([Fixtures.eth, Fixtures.wwan], primary: "eth0")
        let onEthernet = try decide("edge-device.yaml", eth, at: "2026-11-18T12:00:00Z")
        #expect(onEthernet.action == .run && onEthernet.prefer == .lan)
        #expect(try decide("edge-device.yaml", Fixtures.onCellular, at: "2026-11-18T12:00:00Z").action == .pause)
        let night = try decide("edge-device.yaml", Fixtures.onCellular, at: "2026-11-18T01:30:00Z")  // 02:30 CET
        #expect(night.action == .throttle && night.rate == 1 << 20 && night.rule == "cellular-at-night")
        #expect(night.nextChange == Fixtures.date("2026-11-18T04:00:00Z"))  // 05:00 CET
        var usage = Usage()
        usage.record(bytes: 500 << 20, decision: night)
        let spent = try decide("edge-device.yaml", Fixtures.onCellular, at: "2026-11-18T01:30:00Z", usage: usage)
        #expect(spent.rule == "cellular-waits")
    }
}

/// The copies built into the binary are the shipped files, byte for byte: they cannot drift apart.
@Suite struct BuiltInCopiesTests {
    @Test func builtInDefaultPolicyIsPoliciesDefaultYAML() throws {
        let file = try String(contentsOfFile: Fixtures.repoRoot() + "/policies/default.yaml", encoding: .utf8)
        #expect(
            ShippedPolicy.defaultYAML == file, "policies/default.yaml changed: copy it into ShippedPolicy.defaultYAML")
        #expect(ShippedPolicy.defaultPolicy().rules.map(\.name) == ["run-unmetered", "pause-metered"])
    }

    @Test func builtInCommuteScenarioIsScenariosCommuteYAML() throws {
        let file = try String(contentsOfFile: Fixtures.repoRoot() + "/docs/scenarios/commute.yaml", encoding: .utf8)
        #expect(
            ShippedScenario.commuteYAML == file,
            "docs/scenarios/commute.yaml changed: copy it into ShippedScenario.commuteYAML")
    }
}
