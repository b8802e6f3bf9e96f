import Engine
import Foundation
import Policy
import RangeServer
import TestSupport
import Testing

/// The control API as any socket user may use it against a root daemon: no request ends the process,
/// and no user's word spends anyone's budget (issue 23, parts 0 and 2; docs/security.md).
@Suite(.serialized, .needsBinary, .needsOtherUser) struct APIAttackTests {
    static let cellPolicy = """
        version: 1
        rules:
          - name: cell-allowance
            when: { metered: yes }
            action: run
            budget: { name: cell, bytes: 6MiB, period: daily }
        """

    static let slowWifiPolicy = """
        version: 1
        rules:
          - name: slow
            when: { metered: no }
            throttle: 256KiB/s
        """

    /// curl as `nobody` on the daemon's socket.
    static func curlAsNobody(_ daemon: DaemonProcess, _ arguments: [String]) throws -> BinaryRun {
        try BinaryRun.run(
            ["-sS", "--max-time", "5", "--unix-socket", daemon.socket] + arguments,
            executable: "/usr/bin/curl", prefix: SecurityTests.asNobody)
    }

    static func write(_ text: String, to directory: URL, _ name: String) throws -> String {
        let path = directory.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The requests that used to kill the daemon, then thousands of random and mutated ones from `nobody`,
    /// with a root job running and the store's counters a hair below their limit. The daemon answers
    /// throughout, and root's job neither fails nor counts an interruption.
    @Test func noRequestEndsTheDaemon() async throws {
        let (base, _, shared) = try SecurityTests.directories()
        defer { try? FileManager.default.removeItem(at: base) }
        // The saved counters start near Int64.max: a report that overflowed them trapped on every restart.
        let state = base.appendingPathComponent("state")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        chmod(state.path, 0o700)
        do {
            let store = try JobStore(path: state.appendingPathComponent("jobs.sqlite").path)
            try store.saveAccounting(
                usage: Usage(bytes: ["slow@0": .max - 10]), linkBytes: ["wlan0": (kind: "wlan", bytes: .max - 10)])
        }
        let server = try await RangeServer.start(content: .generated(size: 64 << 20, seed: 41))
        let scenario = try DaemonProcess.scenario(in: base, DaemonProcess.wifiForAnHour)
        let policy = try Self.write(Self.slowWifiPolicy, to: base, "slow.yaml")
        let daemon = try DaemonProcess(
            directory: base, scenario: scenario, policy: policy, extra: ["--group", "nogroup"])
        defer { daemon.kill(SIGTERM) }
        #expect(await daemon.waitUntilListening())
        let add = try daemon.cli(["add", server.url("/big.bin"), "-o", shared.appendingPathComponent("big.bin").path])
        #expect(add.status == 0, "\(add.stderr)")
        let jobID = try #require(try daemon.jobs().first.flatMap { ($0["job"] as? [String: Any])?["id"] as? String })

        for target in [
            "/v1/decision?=", "/v1/decision?priority=-9223372036854775808", "/v1/events?=&=",
            "/v1/decision?size=1&size=2", "/v1/decision?%zz",
        ] {
            let run = try Self.curlAsNobody(daemon, ["-o", "/dev/null", "-w", "%{http_code}", "http://x" + target])
            #expect(run.stdout == "400", "\(target): \(run.stdout) \(run.stderr)")
        }
        let usage = try Self.curlAsNobody(
            daemon, ["-X", "POST", "-d", "{\"bytes\": 1099511627776}", "http://x/v1/usage?=1"])
        #expect(usage.stdout.contains("has no name"), "\(usage.stdout)")
        // A key given twice: which one counts would be the decoder's choice, so the body is refused.
        let twice = try Self.curlAsNobody(
            daemon,
            [
                "-X", "POST", "-w", "%{http_code}", "-d",
                "{\"url\": \"http://127.0.0.1:1/a\", \"destination\": \"/tmp/a\", \"u\\u0072l\": \"http://127.0.0.1:1/b\"}",
                "http://x/v1/jobs",
            ])
        #expect(twice.stdout.hasSuffix("400") && twice.stdout.contains("given twice"), "\(twice.stdout)")

        // Reports from nobody while root's job moves bytes: each counts what the machine really received, on
        // top of counters at the limit.
        for _ in 0..<50 {
            _ = try Self.curlAsNobody(daemon, ["-X", "POST", "-d", "{\"bytes\": 1099511627776}", "http://x/v1/usage"])
        }

        // A copy nobody can read wherever the checkout is.
        let script = base.appendingPathComponent("api_fuzz.py").path
        try FileManager.default.copyItem(atPath: RepoPaths.file("Tests/fuzz/api_fuzz.py"), toPath: script)
        chmod(script, 0o644)
        let seed = SplitMix.seed(from: "METERWISE_API_FUZZ_SEED") % (1 << 32)
        let fuzz = try BinaryRun.run(
            [
                script, daemon.socket, "--seed", "\(seed)", "--count", "3000",
                "--seconds", "150", "--job", jobID,
            ],
            executable: "/usr/bin/python3", prefix: SecurityTests.asNobody)
        print(fuzz.stdout)
        #expect(fuzz.status == 0, "\(fuzz.stdout)\(fuzz.stderr)")
        #expect(fuzz.stdout.contains("the daemon still answers"), "\(fuzz.stdout)")

        #expect(daemon.process.isRunning, "the daemon died")
        let links = try daemon.api("/v1/links")
        #expect(links.status == 0 && links.stdout.contains("wlan0"), "\(links.stdout)\(links.stderr)")
        let job = try #require(try daemon.jobs().first?["job"] as? [String: Any])
        #expect(job["state"] as? String != "failed", "\(job)")
        #expect((job["interruptions"] as? Int ?? 0) == 0, "\(job)")
    }

    /// `nobody` reports 2^40 bytes against a root daemon whose policy allows 6 MiB a day on cellular: the
    /// report counts only what the machine received meanwhile, and root's answer stays "run".
    @Test func aUsersReportCannotSpendEveryonesBudget() async throws {
        let (base, _, _) = try SecurityTests.directories()
        defer { try? FileManager.default.removeItem(at: base) }
        let scenario = try DaemonProcess.scenario(in: base, DaemonProcess.cellularForAnHour)
        let policy = try Self.write(Self.cellPolicy, to: base, "cell.yaml")
        let daemon = try DaemonProcess(
            directory: base, scenario: scenario, policy: policy, extra: ["--group", "nogroup"])
        defer { daemon.kill(SIGTERM) }
        #expect(await daemon.waitUntilListening())
        let question = "/v1/decision?size=1000&allow_metered=true"
        let before = try daemon.api(question)
        #expect(before.stdout.contains("\"action\":\"run\""), "\(before.stdout)")

        for _ in 0..<3 {
            let report = try Self.curlAsNobody(
                daemon,
                ["-X", "POST", "-d", "{\"bytes\": 1099511627776}", "http://x/v1/usage?size=1000&allow_metered=true"])
            let body = try #require(
                try JSONSerialization.jsonObject(with: Data(report.stdout.utf8)) as? [String: Any], "\(report.stdout)")
            let counted = try #require(body["counted_bytes"] as? Int, "\(body)")
            #expect(counted < 1 << 20, "counted \(counted) of 2^40 with no traffic")
            #expect(body["action"] as? String == "run", "\(body)")
        }
        let after = try daemon.api(question)
        #expect(
            after.stdout.contains("\"action\":\"run\"") && after.stdout.contains("cell-allowance"), "\(after.stdout)")
    }

    /// With `per_user: yes`, what `nobody` reports — even bytes that really crossed the link — spends only
    /// nobody's share: root's answer stays "run" while nobody's says the budget is used up.
    @Test func aPerUserBudgetTakesOnlyTheReportersShare() async throws {
        let (base, _, _) = try SecurityTests.directories()
        defer { try? FileManager.default.removeItem(at: base) }
        let scenario = try DaemonProcess.scenario(in: base, DaemonProcess.cellularForAnHour)
        let policy = try Self.write(
            Self.cellPolicy.replacingOccurrences(of: "period: daily }", with: "period: daily, per_user: yes }"),
            to: base, "cell.yaml")
        let daemon = try DaemonProcess(
            directory: base, scenario: scenario, policy: policy, extra: ["--group", "nogroup"])
        defer { daemon.kill(SIGTERM) }
        #expect(await daemon.waitUntilListening())
        let question = "http://x/v1/decision?size=1000&allow_metered=true"
        // A look, then 8 MiB really received on this machine (the scenario's links are simulated: the bound
        // is the whole machine's traffic).
        _ = try Self.curlAsNobody(daemon, [question])
        let server = try await RangeServer.start(content: .generated(size: 8 << 20, seed: 43))
        defer { Task { try? await server.shutdown() } }
        let fetch = try BinaryRun.run(["-sS", "-o", "/dev/null", server.url("/f")], executable: "/usr/bin/curl")
        #expect(fetch.status == 0, "\(fetch.stderr)")
        let report = try Self.curlAsNobody(
            daemon,
            ["-X", "POST", "-d", "{\"bytes\": 1099511627776}", "http://x/v1/usage?size=1000&allow_metered=true"])
        let body = try #require(
            try JSONSerialization.jsonObject(with: Data(report.stdout.utf8)) as? [String: Any], "\(report.stdout)")
        #expect((body["counted_bytes"] as? Int ?? 0) >= 6 << 20, "\(body)")
        #expect(body["action"] as? String == "pause", "\(body)")
        let nobodyAsks = try Self.curlAsNobody(daemon, [question])
        #expect(nobodyAsks.stdout.contains("budget cell is used up"), "\(nobodyAsks.stdout)")
        let rootAsks = try daemon.api("/v1/decision?size=1000&allow_metered=true")
        #expect(
            rootAsks.stdout.contains("\"action\":\"run\"") && !rootAsks.stdout.contains("used up"), "\(rootAsks.stdout)"
        )
    }
}
