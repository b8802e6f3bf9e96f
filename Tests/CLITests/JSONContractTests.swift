import Foundation
import RangeServer
import TestSupport
import Testing

/// The JSON contract (docs/api.md): every `--json` output of the binary and every answer of the control
/// API has snake_case keys only. Each output is produced for real and walked key by key.
@Suite(.serialized, .needsBinary) struct JSONContractTests {
    static func expectSnakeCase(_ run: BinaryRun, _ source: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!run.stdout.isEmpty, "\(source) printed nothing: \(run.stderr)", sourceLocation: sourceLocation)
        let found = SnakeCase.violations(inLines: run.stdout, source: source)
        #expect(found.isEmpty, "\(found)", sourceLocation: sourceLocation)
    }

    @Test func walkerCatchesCamelCase() throws {
        let json = try JSONSerialization.jsonObject(
            with: Data(
                #"""
                {"ok_key": 1, "bytesDone": 2, "nested": [{"a-b": 3}], "bytes_by_link": {"br-lan": {"rxBytes": 1}}}
                """#.utf8))
        #expect(
            Set(SnakeCase.violations(in: json)) == [
                "$.bytes_by_link[br-lan].rxBytes", "$.bytesDone", "$.nested[0].a-b",
            ])
        #expect(SnakeCase.violations(inLines: "{\"a\": 1}\nnot json", source: "x") == ["x: not JSON: not json"])
    }

    @Test func linksPolicyAndGetOutputs() async throws {
        Self.expectSnakeCase(try BinaryRun.run(["links", "--json"]), "links --json")
        let commute = RepoPaths.file("docs/scenarios/commute.yaml")
        Self.expectSnakeCase(
            try BinaryRun.run(["links", "--json", "--watch", "--scenario", commute, "--speed", "100"]),
            "links --json --watch --scenario")
        for file in ["default.yaml", "laptop.yaml", "edge-device.yaml"] {
            Self.expectSnakeCase(
                try BinaryRun.run([
                    "policy", "explain", "--json", "--policy", RepoPaths.file("policies/" + file),
                    "--scenario", commute, "--at", "10s", "--size", "700MiB",
                ]),
                "policy explain --json (\(file))")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mwjson-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await RangeServer.start(content: .generated(size: 2 << 20, seed: 5))
        let output = directory.appendingPathComponent("out.bin").path
        let get = try BinaryRun.run(["get", server.url("/out.bin"), "-o", output, "--json"])
        #expect(get.status == 0, "\(get.stderr)")
        Self.expectSnakeCase(get, "get --json")
        // A failure is JSON too.
        let failed = try BinaryRun.run([
            "get", server.url("/other.bin"), "-o", output + ".x", "--json",
            "--sha256", String(repeating: "0", count: 64),
        ])
        #expect(failed.status != 0)
        Self.expectSnakeCase(failed, "get --json (failed)")
        try await server.shutdown()
    }

    @Test func demoOutput() throws {
        let run = try BinaryRun.run(["demo", "--json", "--speed", "10", "--size", "4MiB"])
        #expect(run.status == 0, "\(run.stderr)")
        Self.expectSnakeCase(run, "demo --json")
    }

    @Test func daemonClientOutputsAndAPIAnswers() async throws {
        let directory = URL(fileURLWithPath: "/tmp/mwjson-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await RangeServer.start(
            content: .generated(size: 4 << 20, seed: 6),
            faults: [.throttle(bytesPerSecond: 256 << 10)])
        let daemon = try DaemonProcess(
            directory: directory, scenario: try DaemonProcess.scenario(in: directory, DaemonProcess.wifiForAnHour))
        defer { daemon.kill(SIGTERM) }
        #expect(await daemon.waitUntilListening())
        let watch = try LineCollector([RepoPaths.binary, "watch", "--json", "--socket", daemon.socket])
        defer { watch.stop() }

        let add = try daemon.cli([
            "add", server.url("/a.bin"), "-o", directory.appendingPathComponent("a.bin").path,
            "--tag", "os", "--size", "4MiB", "--json",
        ])
        Self.expectSnakeCase(add, "add --json")
        let job = try JSONSerialization.jsonObject(with: Data(add.stdout.utf8)) as? [String: Any]
        let id = try #require((job?["job"] as? [String: Any])?["id"] as? String, "\(add.stdout)")
        #expect(
            await eventually(timeout: .seconds(20)) {
                ((try? daemon.jobs()).flatMap { $0.first?["job"] as? [String: Any] }?["bytes_done"] as? Int ?? 0) > 0
            })
        for arguments in [
            ["list", "--json"], ["status", id, "--json"], ["status", "--json"], ["pause", id, "--json"],
            ["resume", id, "--json"],
        ] {
            Self.expectSnakeCase(try daemon.cli(arguments), arguments.joined(separator: " "))
        }
        for path in [
            "/v1/jobs", "/v1/jobs/\(id)", "/v1/jobs/\(id)/explain", "/v1/links", "/v1/jobs/nosuchjob",
            "/v1/nothing-here",
        ] {
            Self.expectSnakeCase(try daemon.api(path), "GET \(path)")
        }
        Self.expectSnakeCase(try daemon.api("/v1/jobs", method: "POST", body: "{\"url\": 1}"), "POST /v1/jobs (bad)")
        let posted = try daemon.api(
            "/v1/jobs", method: "POST",
            body: """
                {"url": "\(server.url("/b.bin"))", "destination": "\(directory.appendingPathComponent("b.bin").path)",
                 "allow_metered": false, "tags": ["x"], "priority": 1}
                """)
        Self.expectSnakeCase(posted, "POST /v1/jobs")
        #expect(posted.stdout.contains("\"priority\":1"), "the snake_case request was not read: \(posted.stdout)")
        Self.expectSnakeCase(try daemon.api("/v1/jobs/\(id)/pause", method: "POST"), "POST pause")
        Self.expectSnakeCase(try daemon.cli(["cancel", id, "--json"]), "cancel --json")
        // The event stream: links first, then decisions, progress and the rest.
        #expect(await watch.waitForLine { $0.contains("\"cancelled\"") } != nil, "watch saw no cancel")
        let events = watch.received.map(\.line).joined(separator: "\n")
        #expect(events.contains("\"links\"") && events.contains("\"progress\""))
        #expect(
            SnakeCase.violations(inLines: events, source: "watch --json").isEmpty,
            "\(SnakeCase.violations(inLines: events, source: "watch --json"))")
        let stream = try daemon.api("/v1/events", maxTime: 1)
        Self.expectSnakeCase(stream, "GET /v1/events")
        try await server.shutdown()
    }
}
