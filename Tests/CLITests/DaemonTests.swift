import Foundation
import RangeServer
import TestSupport
import Testing

/// The daemon as a user runs it: a process with a job store and a control socket, driven by the CLI.
@Suite(.serialized) struct DaemonTests {
    static func job(_ jobs: [[String: Any]], _ index: Int) -> [String: Any] {
        (jobs[index]["job"] as? [String: Any]) ?? [:]
    }

    @Test func sigkillDuringThreeDownloadsThenAllComplete() async throws {
        let directory = URL(fileURLWithPath: "/tmp/mwd-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await RangeServer.start(
            content: .generated(size: 6 << 20, seed: 99),
            faults: [.throttle(bytesPerSecond: 1 << 20)])
        let scenario = try DaemonProcess.scenario(in: directory, DaemonProcess.wifiForAnHour)

        var daemon = try DaemonProcess(directory: directory, scenario: scenario)
        #expect(await daemon.waitUntilListening(), "the daemon did not create its socket")
        for name in ["a.bin", "b.bin", "c.bin"] {
            let add = try daemon.cli([
                "add", server.url("/\(name)"), "-o", directory.appendingPathComponent(name).path,
                "--sha256", server.content.sha256Hex(),
            ])
            #expect(add.status == 0, "\(add.stderr)")
        }
        // Let every transfer make progress and checkpoint, then kill the daemon outright.
        #expect(
            await eventually(timeout: .seconds(20)) {
                let jobs = (try? daemon.jobs()) ?? []
                return jobs.count == 3
                    && (0..<3).allSatisfy { (Self.job(jobs, $0)["bytes_done"] as? Int ?? 0) > 1 << 20 }
            }, "transfers did not progress")
        daemon.kill(SIGKILL)
        try? FileManager.default.removeItem(atPath: daemon.socket)

        daemon = try DaemonProcess(directory: directory, scenario: scenario)
        #expect(await daemon.waitUntilListening())
        let done = await eventually(timeout: .seconds(40)) {
            let jobs = (try? daemon.jobs()) ?? []
            return jobs.count == 3 && (0..<3).allSatisfy { Self.job(jobs, $0)["state"] as? String == "completed" }
        }
        #expect(done, "not every job completed after the restart: \(String(describing: try? daemon.jobs()))")
        for name in ["a.bin", "b.bin", "c.bin"] {
            let data = try Data(contentsOf: directory.appendingPathComponent(name))
            #expect(data.count == 6 << 20)
        }
        let jobs = try daemon.jobs()
        for index in 0..<3 { #expect(Self.job(jobs, index)["sha256"] as? String == server.content.sha256Hex()) }
        // Resumed, not restarted: the server sent each file once, plus at most a checkpoint interval per job.
        #expect(server.bytesServed <= 3 * ((6 << 20) + (4 << 20)), "served \(server.bytesServed)")

        let started = Date()
        daemon.kill(SIGTERM)
        #expect(Date().timeIntervalSince(started) < 2, "SIGTERM took over 2 s")
        #expect(daemon.process.terminationStatus == 0)
        try await server.shutdown()
    }

    @Test func statusSaysWhyAJobWaitsAndUserControlsWork() async throws {
        let directory = URL(fileURLWithPath: "/tmp/mwd-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await RangeServer.start(content: .generated(size: 1 << 20, seed: 5))
        let scenario = try DaemonProcess.scenario(in: directory, DaemonProcess.cellularForAnHour)
        let daemon = try DaemonProcess(directory: directory, scenario: scenario)
        defer { daemon.kill(SIGTERM) }
        #expect(await daemon.waitUntilListening())
        let watcher = try LineCollector([RepoPaths.binary, "watch", "--json", "--socket", daemon.socket])
        defer { watcher.stop() }
        #expect(
            await watcher.waitForLine { $0.contains("\"event\":\"links\"") && $0.contains("wwan0") } != nil,
            "watch printed no links event")
        let add = try daemon.cli([
            "add", server.url("/x.bin"), "-o", directory.appendingPathComponent("x.bin").path, "--json",
        ])
        #expect(add.status == 0, "\(add.stderr)")
        let added = try JSONSerialization.jsonObject(with: Data(add.stdout.utf8)) as? [String: Any]
        let id = try #require((added?["job"] as? [String: Any])?["id"] as? String)

        #expect(await eventually { (try? daemon.cli(["status", id]).stdout.contains("pause-metered")) == true })
        let status = try daemon.cli(["status", id])
        #expect(status.stdout.contains("waiting"), "\(status.stdout)")
        #expect(status.stdout.contains("metered"), "\(status.stdout)")

        #expect(try daemon.cli(["pause", id]).stdout.contains("paused"))
        #expect(try daemon.cli(["resume", id]).status == 0)
        let cancel = try daemon.cli(["cancel", id, "--json"])
        #expect(cancel.stdout.contains("\"cancelled\""), "\(cancel.stdout)")
        let missing = try daemon.cli(["status", "nope"])
        #expect(missing.status != 0)
        #expect(missing.stderr.contains("no job nope"), "\(missing.stderr)")

        #expect(await watcher.waitForLine { $0.contains("\"event\":\"cancelled\"") } != nil, "watch missed the cancel")
        try await server.shutdown()
    }

    @Test func changedPolicyFileReloadsAndABrokenOneIsNotApplied() async throws {
        let directory = URL(fileURLWithPath: "/tmp/mwd-\(UInt32.random(in: 0...UInt32.max))")
        let policies = directory.appendingPathComponent("policies")
        try FileManager.default.createDirectory(at: policies, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let policyFile = policies.appendingPathComponent("10-main.yaml")
        func writePolicy(_ rule: String) throws {
            try """
            version: 1
            rules:
              - { name: \(rule), when: { metered: yes }, action: pause }
            """.write(to: policyFile, atomically: true, encoding: .utf8)
        }
        try writePolicy("hold-on-cellular")
        let scenario = try DaemonProcess.scenario(in: directory, DaemonProcess.cellularForAnHour)
        let daemon = try DaemonProcess(directory: directory, scenario: scenario, policy: policies.path)
        defer { daemon.kill(SIGTERM) }
        #expect(await daemon.waitUntilListening())
        let add = try daemon.cli([
            "add", "http://127.0.0.1:9/x.bin", "-o", directory.appendingPathComponent("x.bin").path,
            "--json",
        ])
        let id = try #require(
            ((try JSONSerialization.jsonObject(with: Data(add.stdout.utf8)) as? [String: Any])?["job"]
                as? [String: Any])?["id"] as? String)
        #expect(await eventually { (try? daemon.cli(["status", id]).stdout.contains("hold-on-cellular")) == true })
        // A broken file is not applied: the old rule stays. The daemon logs its rejection once it has read the
        // file (a reload applied would have come before that line), so the status after it shows the outcome.
        try "version: 1\nrules:\n  - { name: broken, when: { metered: maybe }, action: pause }\n"
            .write(to: policyFile, atomically: true, encoding: .utf8)
        #expect(await eventually { daemon.log.contains("policy not reloaded") }, "no rejection logged: \(daemon.log)")
        #expect(daemon.log.contains("10-main.yaml:3"), "the rejection does not name the line: \(daemon.log)")
        #expect(try daemon.cli(["status", id]).stdout.contains("hold-on-cellular"))
        // A valid change is applied at once, without a restart.
        try writePolicy("wait-for-wifi")
        #expect(
            await eventually { (try? daemon.cli(["status", id]).stdout.contains("wait-for-wifi")) == true },
            "the changed policy was not reloaded")
    }

    @Test func clientWithoutDaemonSaysWhatToDo() throws {
        let run = try BinaryRun.run(["list", "--socket", "/tmp/no-such-meterwise.sock"])
        #expect(run.status != 0)
        #expect(
            run.stderr.contains("no control socket at /tmp/no-such-meterwise.sock: no daemon is running"),
            "\(run.stderr)")
        #expect(run.stderr.contains("systemctl --user start meterwise"), "\(run.stderr)")
        // A file that is not a socket fails at once, instead of waiting for a connection timeout.
        let plain = FileManager.default.temporaryDirectory.appendingPathComponent("mw-not-a-socket-\(getpid())").path
        try #require(FileManager.default.createFile(atPath: plain, contents: Data("x".utf8)))
        defer { try? FileManager.default.removeItem(atPath: plain) }
        let start = ContinuousClock.now
        let notSocket = try BinaryRun.run(["list", "--socket", plain])
        #expect(notSocket.status != 0)
        #expect(notSocket.stderr.contains("is not a socket"), "\(notSocket.stderr)")
        #expect(ContinuousClock.now - start < .seconds(10))
    }

    /// `--socket d.sock` relative to the working directory, as a user types it.
    @Test func aRelativeSocketPathWorks() async throws {
        let directory = URL(fileURLWithPath: "/tmp/mwd-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let scenario = try DaemonProcess.scenario(in: directory, DaemonProcess.wifiForAnHour)
        let daemon = try LineCollector([
            "/bin/sh", "-c",
            "cd '\(directory.path)' && exec '\(RepoPaths.binary)' daemon --links scenario "
                + "--scenario '\(scenario)' --policy '\(RepoPaths.file("policies/default.yaml"))' --state state --socket d.sock",
        ])
        defer { daemon.stop() }
        let socket = directory.appendingPathComponent("d.sock").path
        #expect(await eventually(timeout: .seconds(20)) { FileManager.default.fileExists(atPath: socket) })
        #expect(try BinaryRun.run(["list", "--socket", socket]).status == 0)
    }
}
