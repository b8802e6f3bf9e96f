import Foundation
import Lab
import TestSupport
import Testing

/// `meterwise check` and `GET /v1/decision` against a daemon on a scenario: the exit code follows the
/// policy's answer for the live link, and says which rule.
@Suite(.serialized) struct CheckCommandTests {
    func withDaemon(_ scenarioText: String, _ body: (DaemonProcess) async throws -> Void) async throws {
        let directory = URL(fileURLWithPath: "/tmp/mwc-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let daemon = try DaemonProcess(
            directory: directory, scenario: try DaemonProcess.scenario(in: directory, scenarioText))
        defer { daemon.kill(SIGTERM) }
        #expect(await daemon.waitUntilListening())
        try await body(daemon)
    }

    @Test func onAMeteredPrimaryADownloadMustWaitAndTheRuleIsNamed() async throws {
        try await withDaemon(
            """
            links:
              wwan0: { kind: wwan }
            steps:
              - { at: 0s, up: [wwan0], primary: wwan0 }
            end: 1h
            """
        ) { daemon in
            #expect(await eventually { (try? daemon.cli(["check", "--size", "700MiB"]).status) == 1 })
            let check = try daemon.cli(["check", "--size", "700MiB", "--tag", "apt", "--json"])
            #expect(check.status == 1)
            #expect(check.stderr.contains("must wait"), "\(check.stderr)")
            #expect(check.stderr.contains("pause-metered"), "\(check.stderr)")
            let answer = try JSONSerialization.jsonObject(with: Data(check.stdout.utf8)) as? [String: Any]
            #expect(answer?["action"] as? String == "pause")
            #expect(answer?["rule"] as? String == "pause-metered")
            #expect(answer?["source"] as? String == "daemon")

            let api = try daemon.api("/v1/decision?size=1000&tags=apt,os")
            #expect(api.stdout.contains("\"action\":\"pause\""), "\(api.stdout)")
            let bad = try daemon.api("/v1/decision?size=-5")
            #expect(bad.stdout.contains("size must be"), "\(bad.stdout)")
        }
    }

    @Test func onWifiADownloadMayRun() async throws {
        try await withDaemon(DaemonProcess.wifiForAnHour) { daemon in
            #expect(await eventually { (try? daemon.cli(["check", "--size", "700MiB"]).status) == 0 })
            let check = try daemon.cli(["check", "--size", "700MiB"])
            #expect(check.stderr.contains("may download now"), "\(check.stderr)")
        }
    }

    /// No daemon: the links are read from the kernel. In a namespace whose primary uplink is wlan0 a
    /// 700 MiB download may run; once the primary moves to the metered wwan0 it must wait.
    @Test(.needsKernel) func withoutADaemonTheKernelsLinksDecide() throws {
        let uplinks = try VethUplinks.create(prefix: "mwchk")
        defer { uplinks.delete() }
        func check() throws -> BinaryRun {
            try BinaryRun.run(
                ["check", "--size", "700MiB", "--local", "--policy", RepoPaths.file("policies/default.yaml")],
                prefix: ["/usr/sbin/ip", "netns", "exec", uplinks.device.name])
        }
        let onWifi = try check()
        #expect(onWifi.status == 0, "\(onWifi.stderr)")
        #expect(onWifi.stderr.contains("wlan0"), "\(onWifi.stderr)")
        try uplinks.device.ip("link", "set", "wlan0", "down")
        let onCellular = try check()
        #expect(onCellular.status == 1, "\(onCellular.stderr)")
        #expect(onCellular.stderr.contains("pause-metered"), "\(onCellular.stderr)")
        #expect(onCellular.stderr.contains("wwan0"), "\(onCellular.stderr)")
    }

    @Test func aBadSizeOrPolicyIsExitTwo() throws {
        let size = try BinaryRun.run(["check", "--size", "lots", "--local"])
        #expect(size.status == 2)
        #expect(size.stderr.contains("--size lots is not a size"), "\(size.stderr)")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mwc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let policy = directory.appendingPathComponent("broken.yaml").path
        try "version: 1\nrules: [\n".write(toFile: policy, atomically: true, encoding: .utf8)
        let broken = try BinaryRun.run(["check", "--local", "--policy", policy])
        #expect(broken.status == 2)
        #expect(broken.stderr.contains("broken.yaml"), "\(broken.stderr)")
    }
}
