import Foundation
import RangeServer
import TestSupport
import Testing

/// A server's words reach a terminal escaped: a `Content-Encoding` with C1 controls (U+009B is a CSI,
/// U+009D an OSC, U+009C ends it) is shown as `\x9b` in root's `status` and `get`, and as `\u009b` in JSON.
@Suite(.serialized, .needsBinary) struct ServerTextTests {
    static let hostile = "gzip\u{9B}2J\u{9D}0;owned\u{9C}"

    static func hasRawControl(_ text: String) -> Bool {
        text.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x7F || (0x80...0x9F).contains($0.value) }
    }

    @Test func hostileHeaderValuesAreEscapedInStatusListAndGet() async throws {
        let base = URL(fileURLWithPath: "/tmp/mw-text-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: base) }
        let server = try await RangeServer.start(
            content: .generated(size: 64 << 10, seed: 32),
            faults: [.contentEncoding(Self.hostile)])

        let get = try BinaryRun.run(["get", server.url("/g.bin"), "-o", base.appendingPathComponent("g.bin").path])
        #expect(get.status != 0)
        #expect(get.stderr.contains("Content-Encoding gzip\\x9b2J\\x9d0;owned\\x9c"), "\(get.stderr)")
        #expect(!Self.hasRawControl(get.stderr), "\(get.stderr.debugDescription)")
        let getJSON = try BinaryRun.run([
            "get", server.url("/g.bin"), "-o", base.appendingPathComponent("g.bin").path, "--json",
        ])
        #expect(
            getJSON.stdout.contains("\\u009b") && !Self.hasRawControl(getJSON.stdout),
            "\(getJSON.stdout.debugDescription)")

        let scenario = try DaemonProcess.scenario(in: base, DaemonProcess.wifiForAnHour)
        let daemon = try DaemonProcess(directory: base, scenario: scenario)
        defer { daemon.kill(SIGTERM) }
        #expect(await daemon.waitUntilListening())
        let add = try daemon.cli(["add", server.url("/d.bin"), "-o", base.appendingPathComponent("d.bin").path])
        #expect(add.status == 0, "\(add.stderr)")
        let id = try #require(try daemon.jobs().first.flatMap { ($0["job"] as? [String: Any])?["id"] as? String })
        #expect(
            await eventually(timeout: .seconds(20)) {
                (try? daemon.cli(["status", id]).stdout.contains("failed")) == true
            })
        let status = try daemon.cli(["status", id])
        #expect(status.stdout.contains("gzip\\x9b2J\\x9d0;owned\\x9c"), "\(status.stdout)")
        for (what, text) in [
            ("status", status.stdout), ("status (all)", try daemon.cli(["status"]).stdout),
            ("list", try daemon.cli(["list"]).stdout), ("list --json", try daemon.cli(["list", "--json"]).stdout),
            ("status --json", try daemon.cli(["status", id, "--json"]).stdout),
        ] {
            #expect(!Self.hasRawControl(text), "\(what): \(text.debugDescription)")
        }
        let json = try daemon.cli(["list", "--json"]).stdout
        #expect(json.contains("\\u009b"), "\(json)")
        // Still the server's words to a program: the JSON decodes to them.
        let jobs = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])
        let error = (jobs.first?["job"] as? [String: Any])?["error"] as? String
        #expect(error?.contains(Self.hostile) == true, "\(String(describing: error))")
        try await server.shutdown()
    }
}
