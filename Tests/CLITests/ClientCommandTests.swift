import Foundation
import RangeServer
import TestSupport
import Testing

/// `add`, `status`, `list`, `pause` and `resume` against a daemon: every field a job can have is settable,
/// a job reads the same everywhere, and its figures are live.
@Suite(.serialized, .needsBinary) struct ClientCommandTests {
    static func object(_ run: BinaryRun) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]) ?? [:]
    }

    @Test func addSetsEveryFieldAndAJobReadsTheSameEverywhere() async throws {
        let directory = URL(fileURLWithPath: "/tmp/mwc-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let size: Int64 = 6 << 20
        let server = try await RangeServer.start(
            content: .generated(size: size, seed: 81),
            faults: [.throttle(bytesPerSecond: 1 << 20)])
        let scenario = try DaemonProcess.scenario(in: directory, DaemonProcess.wifiForAnHour)
        let daemon = try DaemonProcess(directory: directory, scenario: scenario)
        defer { daemon.kill(SIGTERM) }
        #expect(await daemon.waitUntilListening())

        // `add` sets allow_roaming, segments and head_url (the API took them; the command did not).
        let add = try daemon.cli([
            "add", server.url("/x.bin"), "-o", directory.appendingPathComponent("x.bin").path,
            "--allow-roaming", "--segments", "2", "--head-url", server.url("/x.bin"), "--json",
        ])
        #expect(add.status == 0, "\(add.stderr)")
        let added = try #require(Self.object(add)["job"] as? [String: Any], "\(add.stdout)")
        let id = try #require(added["id"] as? String)
        #expect(added["allow_roaming"] as? Bool == true, "\(added)")
        #expect(added["segments"] as? Int == 2, "\(added)")
        #expect(added["head_url"] as? String == server.url("/x.bin"), "\(added)")

        // bytes_fetched grows while the job runs.
        func job() throws -> [String: Any] {
            (Self.object(try daemon.cli(["status", id, "--json"]))["job"] as? [String: Any]) ?? [:]
        }
        #expect(
            await eventually {
                let j = (try? job()) ?? [:]
                return j["state"] as? String == "running" && (j["bytes_fetched"] as? Int ?? 0) > 0
            }, "bytes_fetched stayed 0 while running: \((try? job()) ?? [:])")

        // `status ID --json` is `GET /v1/jobs/{id}`'s object, plus `explain`.
        let status = Self.object(try daemon.cli(["status", id, "--json"]))
        let api = Self.object(try daemon.api("/v1/jobs/\(id)"))
        #expect(
            Set(status.keys) == Set(api.keys).union(["explain"]),
            "status \(status.keys.sorted()), api \(api.keys.sorted())")
        #expect(status["explain"] is [String: Any])

        // A job the user paused says so, not the rule that last ran it.
        #expect(try daemon.cli(["pause", id]).status == 0)
        let paused = try #require(try daemon.jobs().first { ($0["job"] as? [String: Any])?["id"] as? String == id })
        let pausedJob = try #require(paused["job"] as? [String: Any])
        #expect(pausedJob["state"] as? String == "paused")
        #expect(pausedJob["rule"] as? String == nil, "\(pausedJob)")
        #expect((pausedJob["reason"] as? String)?.contains("paused by the user") == true, "\(pausedJob)")
        #expect(paused["action"] as? String == nil, "\(paused)")
        let list = try daemon.cli(["list"])
        #expect(!list.stdout.contains("run-unmetered"), "\(list.stdout)")

        // Resumed to the end: bytes_fetched sums both runs, so it covers the whole file.
        #expect(try daemon.cli(["resume", id]).status == 0)
        #expect(
            await eventually(timeout: .seconds(60)) { (try? job())?["state"] as? String == "completed" },
            "\((try? job()) ?? [:])")
        let done = try job()
        #expect(Int64(done["bytes_fetched"] as? Int ?? 0) >= size, "\(done)")
        try await server.shutdown()
    }
}
