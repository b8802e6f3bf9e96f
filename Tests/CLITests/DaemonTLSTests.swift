import Foundation
import TestSupport
import Testing

/// TLS and proxies for daemon jobs: a certificate failure fails the job at once with what to fix, and
/// `resume` tries again once trust is fixed; a job's CA file is read with its owner's rights.
@Suite(.serialized, .needsOpenSSL, .needsBinary)
struct DaemonTLSTests {
    static func job(_ daemon: DaemonProcess, _ id: String) throws -> [String: Any]? {
        try daemon.jobs().lazy.compactMap { $0["job"] as? [String: Any] }.first { $0["id"] as? String == id }
    }

    @Test func untrustedJobFailsWithTheFixAndResumesOnceTrusted() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let base = URL(fileURLWithPath: NSTemporaryDirectory() + "mw-dtls-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: base) }
        let content = RangeContent.generated(size: 2 << 20, seed: 9)
        let server = try await RangeServer.start(content: content, tls: try pki.serverTLS())
        defer { Task { try? await server.shutdown() } }
        let trust = base.appendingPathComponent("trust.pem").path
        try FileManager.default.copyItem(atPath: pki.path("other-ca.crt"), toPath: trust)
        let scenario = try DaemonProcess.scenario(in: base, DaemonProcess.wifiForAnHour)
        let daemon = try DaemonProcess(directory: base, scenario: scenario)
        defer { daemon.kill(SIGTERM) }
        #expect(await daemon.waitUntilListening())

        let out = base.appendingPathComponent("out.bin").path
        let add = try daemon.cli(["add", server.url(), "-o", out, "--cacert", trust, "--json"])
        #expect(add.status == 0, "\(add.stderr)")
        let added = try JSONSerialization.jsonObject(with: Data(add.stdout.utf8)) as? [String: Any]
        let id = try #require((added?["job"] as? [String: Any])?["id"] as? String)
        #expect(
            await eventually(timeout: .seconds(10)) { (try? Self.job(daemon, id))??["state"] as? String == "failed" })
        let failed = try #require(try Self.job(daemon, id))
        let error = failed["error"] as? String ?? ""
        #expect(error.contains("not signed by the CAs of ca_file \(trust)"), "\(error)")
        // Failed at once: one TLS handshake, no HTTP request, no retry as an outage.
        #expect(server.requestCount == 0)

        // The user fixes trust and resumes.
        try FileManager.default.removeItem(atPath: trust)
        try FileManager.default.copyItem(atPath: pki.path("ca.crt"), toPath: trust)
        let resume = try daemon.cli(["resume", id])
        #expect(resume.status == 0, "\(resume.stderr)")
        #expect(
            await eventually(timeout: .seconds(20)) { (try? Self.job(daemon, id))??["state"] as? String == "completed" }
        )
        #expect(try SecurityTests.sha256(out) == content.sha256Hex())
    }

    /// `add --http2` (the API's `http2: true`): the job's segments are streams of one HTTP/2 connection where
    /// nginx offers it; without it, HTTP/1.1 as before. nginx's access log says which.
    @Test(.needsNginx, arguments: [true, false])
    func aJobSpeaksHTTP2WhenAsked(http2: Bool) async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let base = URL(fileURLWithPath: NSTemporaryDirectory() + "mw-dh2-\(UInt32.random(in: 0...UInt32.max))")
        let www = base.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: base) }
        let content = RangeContent.generated(size: 24 << 20, seed: 12)
        try Data(content.allBytes()).write(to: www.appendingPathComponent("object.bin"))
        let nginx = try Nginx(
            root: www.path,
            tls: "ssl_certificate \(pki.path("server.crt")); ssl_certificate_key \(pki.path("server.key"));",
            http2: true)
        defer { nginx.stop() }
        let scenario = try DaemonProcess.scenario(in: base, DaemonProcess.wifiForAnHour)
        let daemon = try DaemonProcess(directory: base, scenario: scenario)
        defer { daemon.kill(SIGTERM) }
        #expect(await daemon.waitUntilListening())

        let out = base.appendingPathComponent("out.bin").path
        let add = try daemon.cli(
            ["add", nginx.url("/object.bin"), "-o", out, "--cacert", pki.path("ca.crt"), "--segments", "4", "--json"]
                + (http2 ? ["--http2"] : []))
        #expect(add.status == 0, "\(add.stderr)")
        let added = try JSONSerialization.jsonObject(with: Data(add.stdout.utf8)) as? [String: Any]
        let record = try #require(added?["job"] as? [String: Any])
        let id = try #require(record["id"] as? String)
        #expect((record["http2"] as? Bool) == (http2 ? true : nil))
        #expect(
            await eventually(timeout: .seconds(30)) { (try? Self.job(daemon, id))??["state"] as? String == "completed" }
        )
        #expect(try SecurityTests.sha256(out) == content.sha256Hex())
        let log = try String(contentsOfFile: nginx.prefix + "/logs/access.log", encoding: .utf8)
        let ranged = log.split(separator: "\n").filter { $0.contains("\" 206 ") }
        #expect(ranged.count >= 4, "\(log)")
        for line in ranged {
            #expect(line.contains(http2 ? "HTTP/2.0\" 206" : "HTTP/1.1\" 206"), "\(line)")
        }
    }

    @Test(.needsOtherUser) func aJobsCAFileIsReadWithItsOwnersRights() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let (base, rootOnly, shared) = try SecurityTests.directories()
        defer { try? FileManager.default.removeItem(at: base) }
        let secret = rootOnly.appendingPathComponent("ca.pem").path
        try FileManager.default.copyItem(atPath: pki.path("ca.crt"), toPath: secret)
        chmod(secret, 0o600)
        let scenario = try DaemonProcess.scenario(in: base, DaemonProcess.wifiForAnHour)
        let daemon = try DaemonProcess(directory: base, scenario: scenario, extra: ["--group", "nogroup"])
        defer { daemon.kill(SIGTERM) }
        #expect(await daemon.waitUntilListening())
        let refused = try daemon.cliAsNobody([
            "add", "https://127.0.0.1:9/x.bin", "-o", shared.appendingPathComponent("x.bin").path, "--cacert", secret,
        ])
        #expect(refused.status != 0)
        #expect(
            refused.stderr.contains("ca_file \(secret) cannot be read as uid \(SecurityTests.nobody)"),
            "\(refused.stderr)")
        // A proxy's password is never shown back, to anyone.
        let proxied = try daemon.cliAsNobody([
            "add", "http://127.0.0.1:9/p.bin", "-o", shared.appendingPathComponent("p.bin").path,
            "--proxy", "http://fleet:s3cretpw@127.0.0.1:9", "--json",
        ])
        #expect(proxied.status == 0, "\(proxied.stderr)")
        #expect(
            !proxied.stdout.contains("s3cretpw") && proxied.stdout.contains("<redacted>@127.0.0.1:9"),
            "\(proxied.stdout)")
        #expect(
            proxied.stdout.contains("\"via_proxy\":\"http:\\/\\/fleet:<redacted>@127.0.0.1:9\"")
                || proxied.stdout.contains("\"via_proxy\":\"http://fleet:<redacted>@127.0.0.1:9\""), "\(proxied.stdout)"
        )
        // The job's own `proxy` is shown the same way as `via_proxy` (issue 23: they differed).
        let shown = try JSONSerialization.jsonObject(with: Data(proxied.stdout.utf8)) as? [String: Any]
        #expect(
            (shown?["job"] as? [String: Any])?["proxy"] as? String == shown?["via_proxy"] as? String,
            "\(proxied.stdout)")
        #expect(!(try daemon.cli(["list", "--json"]).stdout.contains("s3cretpw")))
        // Root may use the same file for its own job.
        let mine = try daemon.cli([
            "add", "https://127.0.0.1:9/y.bin", "-o", rootOnly.appendingPathComponent("y.bin").path,
            "--cacert", secret,
        ])
        #expect(mine.status == 0, "\(mine.stderr)")
    }
}
