import Foundation
import RangeServer
import TestSupport
import Testing

/// What one user of the socket may cost the daemon: a bounded number of unfinished jobs, bounded tags, and
/// no file of the kernel's trees (`/proc/self/fd/N` would map the daemon's open files).
@Suite(.serialized, .needsBinary, .needsOtherUser) struct UserLimitsTests {
    /// nobody's request with curl: the HTTP status and the body.
    static func apiAsNobody(_ daemon: DaemonProcess, _ path: String, body: String) throws -> (Int, String) {
        let run = try BinaryRun.run(
            [
                "-s", "-w", "\n%{http_code}", "--unix-socket", daemon.socket, "-H", "Content-Type: application/json",
                "--data", body, "http://localhost" + path,
            ], executable: "/usr/bin/curl", prefix: SecurityTests.asNobody)
        let lines = run.stdout.split(separator: "\n")
        return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
    }

    @Test func aUsersUnfinishedJobsAndTagsAreBounded() async throws {
        let (base, _, shared) = try SecurityTests.directories()
        defer { try? FileManager.default.removeItem(at: base) }
        // Slow enough that no job finishes during the test.
        let server = try await RangeServer.start(
            content: .generated(size: 8 << 20, seed: 31),
            faults: [.throttle(bytesPerSecond: 16 << 10)])
        let scenario = try DaemonProcess.scenario(in: base, DaemonProcess.wifiForAnHour)
        let daemon = try DaemonProcess(
            directory: base, scenario: scenario,
            extra: ["--group", "nogroup", "--max-queued-per-user", "2"])
        defer { daemon.kill(SIGTERM) }
        #expect(await daemon.waitUntilListening())
        let out = { (name: String) in shared.appendingPathComponent(name).path }

        // Two unfinished jobs, then the quota: 429 with the limit and the fix.
        for name in ["a.bin", "b.bin"] {
            let add = try daemon.cliAsNobody(["add", server.url("/" + name), "-o", out(name)])
            #expect(add.status == 0, "\(add.stderr)")
        }
        let third = try daemon.cliAsNobody(["add", server.url("/c.bin"), "-o", out("c.bin")])
        #expect(third.status != 0)
        #expect(
            third.stderr.contains("limit per user (2)") && third.stderr.contains("--max-queued-per-user"),
            "\(third.stderr)")
        let (status, body) = try Self.apiAsNobody(
            daemon, "/v1/jobs", body: #"{"url": "\#(server.url("/d.bin"))", "destination": "\#(out("d.bin"))"}"#)
        #expect(status == 429 && body.contains(#""code":"quota""#), "\(status) \(body)")
        // Root is not limited.
        for name in ["r1.bin", "r2.bin", "r3.bin"] {
            let add = try daemon.cli(["add", server.url("/" + name), "-o", out(name)])
            #expect(add.status == 0, "\(add.stderr)")
        }
        // A cancelled job gives its place back.
        let mine = try daemon.cliAsNobody(["list", "--json"])
        let jobs = (try? JSONSerialization.jsonObject(with: Data(mine.stdout.utf8)) as? [[String: Any]]) ?? []
        let ids = jobs.compactMap { ($0["job"] as? [String: Any])?["id"] as? String }
        let first = try #require(ids.first)
        #expect(try daemon.cliAsNobody(["cancel", first]).status == 0)
        let again = try daemon.cliAsNobody(["add", server.url("/c.bin"), "-o", out("c.bin")])
        #expect(again.status == 0, "\(again.stderr)")

        // Tags: at most 16, each 1 to 64 bytes of a small alphabet.
        let many = (0..<17).flatMap { ["--tag", "t\($0)"] }
        let tooMany = try daemon.cli(["add", server.url("/t.bin"), "-o", out("t.bin")] + many)
        #expect(tooMany.status != 0 && tooMany.stderr.contains("at most 16 per job"), "\(tooMany.stderr)")
        let long = try daemon.cli([
            "add", server.url("/t.bin"), "-o", out("t.bin"), "--tag", String(repeating: "x", count: 65),
        ])
        #expect(long.status != 0 && long.stderr.contains("1 to 64 bytes"), "\(long.stderr)")
        let odd = try daemon.cli(["add", server.url("/t.bin"), "-o", out("t.bin"), "--tag", "a\u{9B}31m"])
        #expect(odd.status != 0 && odd.stderr.contains("only letters, digits"), "\(odd.stderr)")
        #expect(!odd.stderr.unicodeScalars.contains { (0x80...0x9F).contains($0.value) }, "\(odd.stderr)")

        try await server.shutdown()
    }

    @Test func kernelFilesAreRefusedWithOneAnswerWhateverTheDescriptor() async throws {
        let (base, _, shared) = try SecurityTests.directories()
        defer { try? FileManager.default.removeItem(at: base) }
        let server = try await RangeServer.start(content: .generated(size: 64 << 10, seed: 33))
        let scenario = try DaemonProcess.scenario(in: base, DaemonProcess.wifiForAnHour)
        let daemon = try DaemonProcess(directory: base, scenario: scenario, extra: ["--group", "nogroup"])
        defer { daemon.kill(SIGTERM) }
        #expect(await daemon.waitUntilListening())
        let out = { (name: String) in shared.appendingPathComponent(name).path }

        // /proc as a TLS file or a destination: one answer, whatever the descriptor.
        var answers: Set<String> = []
        for fd in [0, 3, 5, 999] {
            let (status, body) = try Self.apiAsNobody(
                daemon, "/v1/jobs",
                body: #"""
                    {"url": "https://127.0.0.1:9/p.bin", "destination": "\#(out("p.bin"))", "ca_file": "/proc/self/fd/\#(fd)"}
                    """#)
            #expect(status == 400 && body.contains("ca_file may not be under /proc"), "\(fd): \(status) \(body)")
            answers.insert(body)
        }
        #expect(answers.count == 1, "\(answers)")
        let devFD = try daemon.cliAsNobody(["add", server.url("/p.bin"), "-o", out("p.bin"), "--cacert", "/dev/fd/3"])
        #expect(devFD.status != 0 && devFD.stderr.contains("ca_file may not be under /dev"), "\(devFD.stderr)")
        let intoProc = try daemon.cliAsNobody(["add", server.url("/p.bin"), "-o", "/proc/self/fd/p.bin"])
        #expect(
            intoProc.status != 0 && intoProc.stderr.contains("destination may not be under /proc"), "\(intoProc.stderr)"
        )
        // Through the user's own symlinks: one answer too, and nothing in /proc is looked up.
        try FileManager.default.createSymbolicLink(atPath: out("fds"), withDestinationPath: "/proc/self/fd")
        var linked: Set<String> = []
        for fd in [0, 3, 5, 999] {
            try FileManager.default.createSymbolicLink(
                atPath: out("ca\(fd).pem"), withDestinationPath: "/proc/self/fd/\(fd)")
            let (status, body) = try Self.apiAsNobody(
                daemon, "/v1/jobs",
                body: #"""
                    {"url": "https://127.0.0.1:9/p.bin", "destination": "\#(out("p.bin"))", "ca_file": "\#(out("ca\(fd).pem"))"}
                    """#)
            #expect(status == 400 && body.contains("leads into /proc"), "\(fd): \(status) \(body)")
            linked.insert(body.replacingOccurrences(of: "ca\(fd).pem", with: "ca.pem"))
            let destination = try daemon.cliAsNobody(["add", server.url("/p.bin"), "-o", out("fds") + "/\(fd)/p.bin"])
            #expect(
                destination.status != 0 && destination.stderr.contains("leads into /proc"),
                "\(fd): \(destination.stderr)")
            linked.insert(destination.stderr.replacingOccurrences(of: "/\(fd)", with: "/N"))
        }
        #expect(linked.count == 2, "\(linked)")
        try await server.shutdown()
    }
}
