import Engine
import Foundation
import Links
import MeterwiseClient
import Policy
import SystemHints
import TestSupport
import Testing

/// The power supply decides (issue 25, part 3), end to end: dbusmock's UPower and power-profiles-daemon on a
/// private bus, the hint sources the daemon runs, the engine and a transfer. On battery at 18 % a large job
/// stops within a second of the bus signal; AC resumes it; the same for power-saver; it completes.
@Suite(.serialized, .needsPowerMock) struct PowerTests {
    static let policy = """
        version: 1
        defaults: { resume_after: 1s, action: run }
        rules:
          - { name: large-files-on-low-battery, when: { power: battery, battery: "< 30%", size: "> 8MiB" }, action: pause }
          - { name: large-files-in-power-saver, when: { power_saver: yes, size: "> 8MiB" }, action: pause }
          - { name: run, action: run }
        """

    @Test func lowBatteryAndPowerSaverHoldALargeJob() async throws {
        let mock = try PowerMock()
        defer { mock.stop() }
        try mock.start(template: "upower", name: "org.freedesktop.UPower", parameters: "{\"OnBattery\": false}")
        try mock.start(template: "power_profiles_daemon", name: "net.hadess.PowerProfiles")
        try mock.setBattery(percent: 64, discharging: false)
        setenv("DBUS_SYSTEM_BUS_ADDRESS", mock.address, 1)
        defer { unsetenv("DBUS_SYSTEM_BUS_ADDRESS") }
        let harness = try await EngineHarness(
            policy: Self.policy, size: 24 << 20, bytesPerSecond: 3 << 20,
            hints: [PowerHints(.upower), PowerHints(.powerProfiles)])
        try await harness.use { h in
            h.monitor.send(up: ["wlan0"], primary: "wlan0")
            #expect(await h.until { await h.engine.snapshot.power.batteryPercent == 64 })
            let job = try await h.add()
            #expect(await h.until { h.count(\.isStarted) == 1 })
            #expect(try await h.until { try await h.engine.status(job.id).job.bytesDone > 1 << 20 })

            try mock.setBattery(percent: 18, discharging: true)
            try mock.setOnBattery(true)
            let unplugged = ContinuousClock.now
            #expect(try await h.until { try await h.state(job.id) == .waiting })
            let held = ContinuousClock.now - unplugged
            #expect(held < .seconds(1), "paused \(held) after UPower said on battery at 18 %")
            let reason = try await h.engine.status(job.id).job.reason ?? ""
            #expect(reason.contains("battery 18% is < 30% (upower"), "\(reason)")

            try mock.setOnBattery(false)
            #expect(await h.until { await h.engine.snapshot.power.onBattery == false })
            h.clock.advance(by: .seconds(2))
            #expect(await h.until { h.count(\.isStarted) == 2 }, "not resumed on AC")

            try mock.setProfile("power-saver")
            let saver = ContinuousClock.now
            #expect(try await h.until { try await h.state(job.id) == .waiting })
            #expect(ContinuousClock.now - saver < .seconds(1))
            #expect((try await h.engine.status(job.id).job.reason ?? "").contains("power_saver is yes"))
            try mock.setProfile("balanced")
            #expect(await h.until { await h.engine.snapshot.power.profile == "balanced" })
            h.clock.advance(by: .seconds(2))
            #expect(try await h.until(timeout: .seconds(30)) { try await h.state(job.id) == .completed })
            #expect(try await h.engine.status(job.id).job.sha256 == h.server.content.sha256Hex())
        }
    }

    /// The sources alone: absent services are unknown; UPower stopping and starting again is followed.
    @Test func theSourcesFollowTheServices() async throws {
        let mock = try PowerMock()
        defer { mock.stop() }
        setenv("DBUS_SYSTEM_BUS_ADDRESS", mock.address, 1)
        defer { unsetenv("DBUS_SYSTEM_BUS_ADDRESS") }
        let latest = Latest()
        let task = Task { for await hints in PowerHints(.upower).hints() { latest.set(hints) } }
        defer { task.cancel() }
        #expect(await eventually { latest.value != nil })
        #expect(latest.value?.power == .unknown)
        try mock.start(template: "upower", name: "org.freedesktop.UPower", parameters: "{\"OnBattery\": true}")
        #expect(await eventually { latest.value?.power.onBattery == true }, "\(String(describing: latest.value))")
        #expect(latest.value?.power.batteryPercent == nil, "no battery present yet")
        try mock.setBattery(percent: 42.5, discharging: true)
        #expect(await eventually { latest.value?.power.batteryPercent == 42.5 })
        #expect(latest.value?.power.batteryState == "discharging")
        mock.kill(template: "upower")
        #expect(await eventually { latest.value?.power == .unknown })
        try mock.start(template: "upower", name: "org.freedesktop.UPower", parameters: "{\"OnBattery\": false}")
        #expect(await eventually { latest.value?.power.onBattery == false })
    }

    final class Latest: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: LinkHints?
        var value: LinkHints? { lock.withLock { stored } }
        func set(_ hints: LinkHints) { lock.withLock { stored = hints } }
    }
}
