import Foundation
import RangeServer
import TestSupport
import Testing

@testable import Transfer

/// `meterwise get` over https as a user runs it: an untrusted CA fails at once with exit 60 and the fix,
/// `--cacert` makes it work, nginx's `ssl_verify_client on` with and without `--cert/--key`, redirects,
/// and the proxy environment with a real proxy.
@Suite(.serialized, .needsOpenSSL, .needsBinary)
struct TLSCommandTests {
    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
        var elapsed: Duration
    }

    /// Runs the binary with `environment` added to a copy of this process's (proxy variables removed).
    static func get(_ arguments: [String], environment: [String: String] = [:]) throws -> Run {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: RepoPaths.binary)
        process.arguments = ["get"] + arguments
        var env = ProcessInfo.processInfo.environment
        for name in ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"] {
            env[name] = nil
        }
        env.merge(environment) { $1 }
        process.environment = env
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let clock = ContinuousClock()
        let start = clock.now
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Run(
            status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self), elapsed: clock.now - start)
    }

    @Test func untrustedCAExits60AtOnceThenCACertWorks() async throws {
        try await TLSTests.withTLSServer { pki, server, fixture in
            let out = fixture.path("cli.bin")
            let refused = try Self.get([server.url(), "-o", out])
            #expect(refused.status == 60, "\(refused)")
            #expect(refused.elapsed < .seconds(2), "\(refused.elapsed)")
            #expect(refused.stderr.contains("not signed by the CAs this machine trusts"), "\(refused.stderr)")
            #expect(refused.stderr.contains("--cacert"))
            #expect(!refused.stderr.contains("NIOSSL") && !refused.stderr.contains("/.build/"), "\(refused.stderr)")

            let json = try Self.get([server.url(), "-o", out, "--json"])
            #expect(json.status == 60)
            #expect(json.stdout.contains("\"code\":\"tls\""), "\(json.stdout)")

            let trusted = try Self.get([server.url(), "-o", out, "--cacert", pki.path("ca.crt"), "--print-sha256"])
            #expect(trusted.status == 0, "\(trusted)")
            #expect(trusted.stdout.hasPrefix(TLSTests.content.sha256Hex() + "  "), "\(trusted.stdout)")
        }
    }

    @Test func badTLSFilesExit66() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let run = try Self.get(["https://127.0.0.1:9/x", "-o", "/tmp/never", "--cacert", pki.path("nope.crt")])
        #expect(run.status == 66, "\(run)")
        #expect(run.stderr.contains("--cacert \(pki.path("nope.crt")) cannot be read"), "\(run.stderr)")
        let half = try Self.get(["https://127.0.0.1:9/x", "-o", "/tmp/never", "--cert", pki.path("client.crt")])
        #expect(half.status == 64, "\(half)")
        #expect(half.stderr.contains("--key"))
    }

    /// nginx with TLS serving `root` (a random `object.bin` of `size` bytes, whose sha256 `body` gets), its CA
    /// the test's; `extra` goes into the server block; `http2`: offered in ALPN.
    static func withTLSNginx(
        _ extra: String = "", size: Int = 2 << 20, http2: Bool = false,
        _ body: (TestPKI, Nginx, Fixture, String) async throws -> Void
    )
        async throws
    {
        let pki = try TestPKI()
        defer { pki.remove() }
        let fixture = Fixture()
        defer { fixture.remove() }
        let root = fixture.path("www")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let sha = try NginxTests.writeRandom(root + "/object.bin", size: size, seed: 5)
        let nginx = try Nginx(
            root: root,
            tls: "ssl_certificate \(pki.path("server.crt")); ssl_certificate_key \(pki.path("server.key")); \(extra)",
            http2: http2)
        defer { nginx.stop() }
        try await body(pki, nginx, fixture, sha)
    }

    @Test(.needsNginx) func nginxRequiringClientCertificates() async throws {
        let verify = "ssl_client_certificate PKI/ca.crt; ssl_verify_client on;"
        let pki = try TestPKI()
        defer { pki.remove() }
        try await Self.withTLSNginx(verify.replacingOccurrences(of: "PKI", with: pki.directory)) {
            serverPKI, nginx, fixture, sha in
            // The client's CA is this test's first PKI; the server's certificate is from the second.
            let url = nginx.url("/object.bin")
            let common = ["-o", fixture.path("m.bin"), "--cacert", serverPKI.path("ca.crt")]
            let without = try Self.get([url] + common)
            #expect(without.status == 60, "\(without)")
            #expect(without.stderr.contains("requires a client certificate"), "\(without.stderr)")
            #expect(without.stderr.contains("--cert"))
            let with = try Self.get(
                [url] + common + ["--cert", pki.path("client.crt"), "--key", pki.path("client.key"), "--print-sha256"])
            #expect(with.status == 0, "\(with)")
            #expect(with.stdout.hasPrefix(sha + "  "), "\(with.stdout)")
            // A device certificate from a CA nginx does not trust is refused too.
            let foreign = try Self.get(
                [
                    url, "-o", fixture.path("f.bin"), "--cacert", serverPKI.path("ca.crt"), "--cert",
                    serverPKI.path("client.crt"), "--key", serverPKI.path("client.key"),
                ])
            #expect(foreign.status == 60, "\(foreign)")
            #expect(foreign.stderr.contains("refused"), "\(foreign.stderr)")
        }
    }

    @Test(.needsNginx) func redirectsHTTPSToHTTPRefusedAndCrossHostFollowed() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        try await Fixture.withServer(content: TLSTests.content) { plain in
            // A second TLS server on another host name (localhost; the certificate names it).
            let pki = try TestPKI()
            defer { pki.remove() }
            let other = try await RangeServer.start(content: TLSTests.content, tls: try pki.serverTLS())
            defer { Task { try? await other.shutdown() } }
            let redirects = """
                location = /down { return 302 \(plain.url()); }
                location = /cross { return 302 https://localhost:\(other.port)/file; }
                """
            let nginxRoot = fixture.path("www")
            try FileManager.default.createDirectory(atPath: nginxRoot, withIntermediateDirectories: true)
            let nginx = try Nginx(
                root: nginxRoot,
                tls:
                    "ssl_certificate \(pki.path("server.crt")); ssl_certificate_key \(pki.path("server.key")); \(redirects)"
            )
            defer { nginx.stop() }
            let ca = ["--cacert", pki.path("ca.crt")]
            let down = try Self.get([nginx.url("/down"), "-o", fixture.path("down.bin")] + ca)
            #expect(down.status == 69, "\(down)")
            #expect(down.stderr.contains("http://"), "\(down.stderr)")
            #expect(plain.requestCount == 0)
            let cross = try Self.get([nginx.url("/cross"), "-o", fixture.path("cross.bin"), "--print-sha256"] + ca)
            #expect(cross.status == 0, "\(cross)")
            #expect(cross.stdout.hasPrefix(TLSTests.content.sha256Hex()), "\(cross.stdout)")
        }
    }

    @Test(.needsProxy) func proxyEnvironmentIsHonouredAndNoProxyBypassesIt() async throws {
        let proxy = try Tinyproxy()
        defer { proxy.stop() }
        try await TLSTests.withTLSServer { pki, server, fixture in
            let args = [server.url(), "--cacert", pki.path("ca.crt"), "--json"]
            let via = try Self.get(args + ["-o", fixture.path("p.bin")], environment: ["https_proxy": proxy.url])
            #expect(via.status == 0, "\(via)")
            #expect(proxy.connects.contains("127.0.0.1:\(server.port)"), "\(proxy.log)")
            #expect(via.stdout.contains("\"proxy\":\"http://127.0.0.1:\(proxy.port)\""), "\(via.stdout)")

            let count = proxy.connects.count
            let bypass = try Self.get(
                args + ["-o", fixture.path("d.bin")], environment: ["https_proxy": proxy.url, "no_proxy": "127.0.0.1"])
            #expect(bypass.status == 0, "\(bypass)")
            #expect(proxy.connects.count == count)
            #expect(bypass.stdout.contains("\"proxy\":null"))

            let flag = try Self.get(
                args + ["-o", fixture.path("f.bin"), "--proxy", "http://u:secret@127.0.0.1:\(proxy.port)"])
            #expect(flag.status == 0, "\(flag)")
            #expect(!flag.stdout.contains("secret") && !flag.stderr.contains("secret"))
            #expect(proxy.connects.count == count + 1)
        }
    }
}
