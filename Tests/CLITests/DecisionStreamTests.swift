import Foundation
import TestSupport
import Testing

/// The event stream's answers for a question (`/v1/events?tags=...`), `check --watch`, and `run` following
/// the daemon and counting the bytes its command receives against the policy's budget.
@Suite(.serialized) struct DecisionStreamTests {
    static func directory() throws -> URL {
        let directory = URL(fileURLWithPath: "/tmp/mws-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test func checkWatchPrintsEachChangeOfTheAnswer() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Wi-Fi, then cellular alone from 3 s, then Wi-Fi again from 6 s.
        let scenario = try DaemonProcess.scenario(
            in: directory,
            """
            links:
              wlan0: { kind: wlan }
              wwan0: { kind: wwan }
            steps:
              - { at: 0s, up: [wlan0, wwan0], primary: wlan0 }
              - { at: 3s, down: [wlan0], primary: wwan0 }
              - { at: 6s, up: [wlan0], primary: wlan0 }
            end: 1h
            """)
        let daemon = try DaemonProcess(directory: directory, scenario: scenario)
        defer { daemon.kill(SIGTERM) }
        #expect(await daemon.waitUntilListening())
        let watch = try LineCollector([
            RepoPaths.binary, "check", "--tag", "apt", "--size", "700MiB", "--watch", "--json",
            "--socket", daemon.socket,
        ])
        defer { watch.stop() }
        func action(_ line: String) -> String? {
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["action"] as? String
        }
        let first = await watch.waitForLine { action($0) != nil }
        #expect(first.flatMap { action($0.line) } == "run", "\(watch.received)")
        let paused = await watch.waitForLine { action($0) == "pause" }
        #expect(paused != nil, "no pause when wwan0 became the primary: \(watch.received)")
        #expect(paused?.line.contains("\"source\":\"daemon\"") == true)
        let lines = watch.received.count
        let again = await watch.waitForLine(after: lines) { action($0) == "run" }
        #expect(again != nil, "no run when wlan0 returned: \(watch.received)")
        // One line per change, not per event.
        #expect(watch.received.count <= 4, "\(watch.received)")

        // A bad question is refused before the stream starts.
        let bad = try daemon.api("/v1/events?size=lots", maxTime: 5)
        #expect(bad.stdout.contains("size must be a number"), "\(bad.stdout)")
    }

    @Test func runCountsTheCommandsBytesAgainstTheBudgetAndStopsItWhenSpent() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let policy = directory.appendingPathComponent("policy.yaml")
        try """
        version: 1
        rules:
          - name: scripts-allowance
            when: { metered: yes, tags: [script] }
            action: run
            budget: { name: scripts, bytes: 2MiB, period: daily }
          - { name: hold-metered, when: { metered: yes }, action: pause }
        """.write(to: policy, atomically: true, encoding: .utf8)
        let scenario = try DaemonProcess.scenario(in: directory, DaemonProcess.cellularForAnHour)
        let daemon = try DaemonProcess(directory: directory, scenario: scenario, policy: policy.path)
        defer { daemon.kill(SIGTERM) }
        #expect(await daemon.waitUntilListening())
        // The command (curl, which receives with recvfrom) downloads 6 MB at 1 MB/s from a loopback server.
        let server = try await RangeServer.start(
            content: .generated(size: 6_000_000, seed: 11),
            faults: [.throttle(bytesPerSecond: 1_000_000)])
        defer { Task { try? await server.shutdown() } }
        let marker = directory.appendingPathComponent("started").path
        let run = Process()
        run.executableURL = URL(fileURLWithPath: RepoPaths.binary)
        run.arguments = [
            "run", "--tag", "script", "--socket", daemon.socket, "--",
            "/bin/sh", "-c", "touch '\(marker)'; exec curl -s -o /dev/null \(server.url())",
        ]
        let errors = Pipe()
        run.standardError = errors
        run.standardOutput = FileHandle.nullDevice
        try run.run()
        defer {
            if run.isRunning {
                run.terminate()
                run.waitUntilExit()
            }
        }
        #expect(await eventually { FileManager.default.fileExists(atPath: marker) }, "the command was not started")
        // Within a report interval or two of 2 MiB, the budget is spent and the daemon says pause.
        let used = await eventually(timeout: .seconds(15)) {
            let metrics = (try? daemon.api("/metrics").stdout) ?? ""
            return metrics.split(separator: "\n").contains {
                $0.hasPrefix("meterwise_budget_used_bytes{")
                    && (Int64($0.split(separator: " ").last ?? "") ?? 0) >= 2 << 20
            }
        }
        #expect(used, "the command's bytes were not counted: \((try? daemon.api("/metrics").stdout) ?? "")")
        let check = try BinaryRun.run(["check", "--tag", "script", "--socket", daemon.socket])
        #expect(check.status == 1, "the spent budget still allows: \(check.stderr)")
        run.terminate()
        run.waitUntilExit()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(stderr.contains("started /bin/sh"), "\(stderr)")
        #expect(
            stderr.contains("stopped /bin/sh (SIGSTOP)"),
            "the command was not stopped when the budget was spent: \(stderr)")
        #expect(stderr.contains("hold-metered"), "\(stderr)")
    }
}
