import Foundation
import Lab
import RangeServer
import TestSupport
import Testing

/// The built binary's `serve` and `lab` commands, run the way the lab runs them.
@Suite(.needsBinary) struct LabCommandTests {
    let binary = RepoPaths.binary

    @Test func servePrintsItsURLAndContentHashThenStopsOnSIGTERM() async throws {
        let (_, status) = try await ChildProcess.run(
            [binary, "serve", "--host", "127.0.0.1", "--port", "0", "--size", "1MiB", "--seed", "7"]
        ) { server in
            var served: LabRun.Served?
            for await line in server.lines {
                served = try? JSONDecoder().decode(LabRun.Served.self, from: Data(line.text.utf8))
                break
            }
            let info = try #require(served, "no JSON line: \(server.stderrText)")
            let content = RangeContent.generated(size: 1 << 20, seed: 7)
            #expect(info.sha256 == content.sha256Hex())
            #expect(info.size == 1 << 20)
            #expect(info.url.hasPrefix("http://127.0.0.1:") && info.url.hasSuffix("/file"))
            let fetched = try Command.run([
                "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code} %{size_download}",
                info.url,
            ])
            #expect(fetched == "200 1048576")
            server.terminate()
            await server.outputEnded()
        }
        #expect(status == 0, "serve did not exit cleanly on SIGTERM")
    }

    @Test(.enabled(if: getuid() == 0 && Command.exists("setpriv"), "needs root and setpriv to drop to nobody"))
    func labWithoutRootSaysHowToRunIt() throws {
        let run = try BinaryRun.run(
            ["--reuid", "65534", "--regid", "65534", "--clear-groups", binary, "lab"],
            executable: "/usr/bin/setpriv")
        try #require(
            !run.stderr.contains("Permission denied"),
            "nobody cannot run \(binary): build in a directory others can read")
        #expect(run.status == 77)
        #expect(run.stderr.contains("needs root") && run.stderr.contains("sudo"))
    }

    /// policy.md: a policy with errors exits 78 (EX_CONFIG), as daemon and demo do, before any namespace
    /// is made; a missing policy file too.
    @Test(.needsKernel, arguments: ["bad", "missing"])
    func labWithABadPolicyExits78(_ kind: String) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "mwlabpolicy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let policy = directory.appendingPathComponent("policy.yaml").path
        if kind == "bad" {
            try "version: 1\nrules:\n  - { name: a, when: { metered: maybe }, action: run }\n".write(
                toFile: policy, atomically: true, encoding: .utf8)
        }
        let run = try BinaryRun.run(
            ["lab", RepoPaths.file("docs/scenarios/commute.yaml"), "--policy", policy], executable: binary)
        #expect(run.status == 78, "\(run.stderr)")
        #expect(run.stderr.contains(policy), "\(run.stderr)")
        #expect(!run.stderr.contains("Usage:"), "\(run.stderr)")
    }

    @Test(.needsKernel) func labWithGetPrintsTheJSONSummaryAndRemovesItsNamespaces() throws {
        let scenario = FileManager.default.temporaryDirectory.appendingPathComponent("mwlabcli-\(getpid()).yaml").path
        try """
        name: short
        links:
          wlan0: { kind: wlan }
          wwan0: { kind: wwan }
        steps:
          - { at: 0s, up: [wlan0, wwan0], primary: wlan0 }
          - { at: 200ms, primary: wlan0 }
        """.write(toFile: scenario, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: scenario) }
        // What a SIGKILLed lab left: its work directory, a partial file inside. No process has this pid (it
        // is above any pid_max), so the next lab removes it and says so.
        let stale = FileManager.default.temporaryDirectory.appendingPathComponent("meterwise-lab-2147483646").path
        try FileManager.default.createDirectory(atPath: stale, withIntermediateDirectories: true)
        try Data(count: 4096).write(to: URL(fileURLWithPath: stale + "/lab.bin.part"))
        defer { try? FileManager.default.removeItem(atPath: stale) }
        let run = try BinaryRun.run(
            ["lab", scenario, "--downloader", "get", "--size", "2MiB", "--json"],
            executable: binary)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: stale), "the dead lab's \(stale) is still there")
        #expect(run.stderr.contains("lab: removed \(stale) left by a lab that died (pid 2147483646)"), "\(run.stderr)")
        // The JSON contract (docs/api.md): every line, events and summary, has snake_case keys only.
        #expect(
            SnakeCase.violations(inLines: run.stdout, source: "lab --json").isEmpty,
            "\(SnakeCase.violations(inLines: run.stdout, source: "lab --json"))")
        let last = try #require(run.stdout.split(separator: "\n").last)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
        #expect(object["sha256_ok"] as? Bool == true)
        let interfaces = try #require(object["interfaces"] as? [String: [String: Int64]])
        #expect((interfaces["wlan0"]?["rx_bytes"] ?? 0) >= 2 << 20)
        #expect((interfaces["wwan0"]?["rx_bytes"] ?? .max) < 16 << 10)
        #expect(object["engine_bytes"] as? [String: Int64] == ["total": 2 << 20])
        #expect(run.stderr.contains("lab: namespaces mwlab-dev-"))
        let listed = try Command.run(["ip", "netns", "list"])
        for word in run.stderr.split(whereSeparator: { $0 == " " || $0 == "\n" }) where word.hasPrefix("mwlab-") {
            #expect(!listed.contains(word), "\(word) left behind")
        }
    }

    /// The engine's dual-uplink mechanism, proven by the kernel's counters: wwan0 is the primary all
    /// along, the policy allows only unmetered links, and the bytes arrive on wlan0.
    @Test(.needsKernel) func engineKeepsToWlanWhileMeteredWwanIsPrimary() throws {
        let run = try BinaryRun.run(
            [
                "lab", RepoPaths.file("docs/scenarios/dual-uplink.yaml"), "--size", "8MiB", "--json",
                "--policy", RepoPaths.file("bench/engine/dual-uplink-policy.yaml"),
            ],
            executable: binary)
        #expect(run.status == 0, "\(run.stderr)")
        let last = try #require(run.stdout.split(separator: "\n").last)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
        #expect(object["sha256_ok"] as? Bool == true)
        let interfaces = try #require(object["interfaces"] as? [String: [String: Int64]])
        #expect((interfaces["wlan0"]?["rx_bytes"] ?? 0) >= 8 << 20)
        #expect((interfaces["wwan0"]?["rx_bytes"] ?? .max) < 16 << 10, "payload on wwan0")
        let engine = try #require(object["engine_bytes"] as? [String: Int64])
        #expect((engine["wlan0"] ?? 0) >= 8 << 20)
        #expect((engine["wwan0"] ?? 0) == 0)
    }

    /// The commute scenario in the kernel (sped up 4x), a verified sha256, wwan0 ≤ 256 KiB, and
    /// the engine paused while wwan0 was the primary. No file is named and the lab runs from /: the built-in
    /// scenario is played, as an installed binary, with no scenarios folder at hand, needs (before, the
    /// default was the relative path `docs/scenarios/commute.yaml`, found only from the repository's root).
    @Test(.needsKernel) func commuteInTheKernelPausesOnCellular() throws {
        let run = try BinaryRun.run(
            [
                "lab", "--size", "16MiB", "--speed", "4", "--json", "--policy", RepoPaths.file("policies/default.yaml"),
            ],
            executable: binary, prefix: ["/usr/bin/env", "-C", "/"])
        #expect(run.status == 0, "\(run.stderr)")
        let last = try #require(run.stdout.split(separator: "\n").last)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
        #expect(object["sha256_ok"] as? Bool == true)
        let interfaces = try #require(object["interfaces"] as? [String: [String: Int64]])
        #expect((interfaces["wwan0"]?["rx_bytes"] ?? .max) <= 256 << 10)
        #expect((interfaces["wlan0"]?["rx_bytes"] ?? 0) >= 16 << 20)
        let events = try #require(object["engine_events"] as? [[String: Any]])
        #expect(events.contains { ($0["event"] as? [String: Any])?["event"] as? String == "paused" })
        // The engine is told the size served (it said 64 MiB, the demo's default, whatever --size was).
        let start = events.compactMap { $0["event"] as? [String: Any] }.first { $0["event"] as? String == "start" }
        #expect(start?["size"] as? Int == 16 << 20, "\(start ?? [:])")
        #expect((object["engine_bytes"] as? [String: Int64])?["wwan0"] ?? 0 == 0)
    }
}
