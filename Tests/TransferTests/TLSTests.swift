import Foundation
import NIOSSL
import RangeServer
import TestSupport
import Testing

@testable import Transfer

/// https against the RangeServer speaking TLS with a CA made for this run: trust from a file, every
/// certificate failure permanent and explained, client certificates, and a real proxy (tinyproxy).
@Suite(.serialized, .needsOpenSSL)
struct TLSTests {
    static let content = RangeContent.generated(size: 3 << 20, seed: 77)

    /// Runs `body` with a fresh PKI and a TLS RangeServer presenting `certificate`.
    static func withTLSServer(
        certificate: String = "server", requireClientCertificate: Bool = false,
        _ body: (TestPKI, RangeServer, Fixture) async throws -> Void
    ) async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let fixture = Fixture()
        defer { fixture.remove() }
        let server = try await RangeServer.start(
            content: content,
            tls: try pki.serverTLS(certificate, requireClientCertificate: requireClientCertificate))
        do {
            try await body(pki, server, fixture)
            try await server.shutdown()
        } catch {
            try? await server.shutdown()
            throw error
        }
    }

    /// The download's failure, and how long it took to fail.
    static func failure(_ request: DownloadRequest) async -> (TransferError?, Duration) {
        let clock = ContinuousClock()
        let start = clock.now
        do {
            _ = try await Download(request: request).run()
            return (nil, clock.now - start)
        } catch {
            return (error, clock.now - start)
        }
    }

    @Test func trustedThroughCAFileDownloadsTheRightBytes() async throws {
        try await Self.withTLSServer { pki, server, fixture in
            var request = fixture.request(server)
            request.tls = try TLSSettings.load(caFile: pki.path("ca.crt"))
            let outcome = try await Download(request: request).run()
            guard case .completed(let result) = outcome else {
                Issue.record("\(outcome)")
                return
            }
            #expect(result.sha256 == Self.content.sha256Hex())
            #expect(server.url().hasPrefix("https://"))
            // TLS records' headers and tags are not body bytes thrown away.
            #expect(result.discardedBytes == 0)
        }
    }

    @Test func untrustedIssuerFailsAtOnceNamingTheCauseAndTheFix() async throws {
        try await Self.withTLSServer { _, server, fixture in
            let (error, elapsed) = await Self.failure(fixture.request(server))
            let e = try #require(error)
            #expect(e.code == .tls)
            #expect(elapsed < .seconds(2), "took \(elapsed)")
            #expect(e.message.contains("127.0.0.1:\(server.port)"), "\(e.message)")
            #expect(e.message.contains("Meterwise Test CA"), "\(e.message)")
            #expect(e.message.contains("--cacert"), "\(e.message)")
            #expect(
                !e.message.contains("NIOSSL") && !e.message.contains("BoringSSL") && !e.message.contains("/.build/"))
            // One handshake, no retries.
            #expect(server.requestCount == 0)
        }
    }

    @Test func aCAFileOfAnotherCAIsNotEnough() async throws {
        try await Self.withTLSServer { pki, server, fixture in
            var request = fixture.request(server)
            request.tls = try TLSSettings.load(caFile: pki.path("other-ca.crt"))
            let (error, _) = await Self.failure(request)
            let e = try #require(error)
            #expect(e.code == .tls)
            #expect(e.message.contains("the CAs of --cacert \(pki.path("other-ca.crt"))"), "\(e.message)")
        }
    }

    @Test(arguments: [
        ("expired", "expired on 2020-02-01"),
        ("future", "valid only from 2099-01-01"),
        ("wronghost", "is for wrong.invalid, not 127.0.0.1"),
    ])
    func certificateFailuresAreExplained(certificate: String, fragment: String) async throws {
        try await Self.withTLSServer(certificate: certificate) { pki, server, fixture in
            var request = fixture.request(server)
            request.tls = try TLSSettings.load(caFile: pki.path("ca.crt"))
            let (error, elapsed) = await Self.failure(request)
            let e = try #require(error)
            #expect(e.code == .tls)
            #expect(e.message.contains(fragment), "\(e.message)")
            #expect(elapsed < .seconds(2))
            #expect(!Fixture.exists(request.destination))
            #expect(!Fixture.exists(request.partialPath), "an empty partial file is left behind")
        }
    }

    @Test func plainHTTPOnAnHTTPSURLIsSaid() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        try await Fixture.withServer(content: Self.content) { server in
            var request = fixture.request(server)
            request.url = "https://127.0.0.1:\(server.port)/file"
            let (error, _) = await Self.failure(request)
            let e = try #require(error)
            #expect(e.code == .tls)
            #expect(e.message.contains("does not speak TLS"), "\(e.message)")
        }
    }

    @Test func clientCertificateRequiredAndGiven() async throws {
        try await Self.withTLSServer(requireClientCertificate: true) { pki, server, fixture in
            var request = fixture.request(server)
            request.tls = try TLSSettings.load(caFile: pki.path("ca.crt"))
            let (error, elapsed) = await Self.failure(request)
            let e = try #require(error)
            #expect(e.code == .tls)
            #expect(
                e.message.contains("requires a client certificate") || e.message.contains("refused"), "\(e.message)")
            #expect(e.message.contains("--cert"), "\(e.message)")
            #expect(elapsed < .seconds(2))

            request.tls = try TLSSettings.load(
                caFile: pki.path("ca.crt"), certFile: pki.path("client.crt"), keyFile: pki.path("client.key"))
            let outcome = try await Download(request: request).run()
            guard case .completed(let result) = outcome else {
                Issue.record("\(outcome)")
                return
            }
            #expect(result.sha256 == Self.content.sha256Hex())
        }
    }

    @Test func filesThatCannotBeUsedSaySo() throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let cases: [(() throws(TransferError) -> TLSSettings, String)] = [
            ({ () throws(TransferError) in try TLSSettings.load(caFile: pki.path("missing.crt")) }, "cannot be read"),
            (
                { () throws(TransferError) in try TLSSettings.load(caFile: pki.path("ca.key")) },
                "holds no PEM certificate"
            ),
            (
                { () throws(TransferError) in
                    try TLSSettings.load(certFile: pki.path("client.crt"), keyFile: pki.path("server.key"))
                },
                "is not the private key of"
            ),
            (
                { () throws(TransferError) in
                    try TLSSettings.load(certFile: pki.path("client.crt"), keyFile: pki.path("client.crt"))
                },
                "is not an unencrypted PEM private key"
            ),
            ({ () throws(TransferError) in try TLSSettings.load(caFile: pki.directory) }, "not a regular file"),
        ]
        for (load, fragment) in cases {
            do {
                _ = try load()
                Issue.record("loaded; expected \(fragment)")
            } catch {
                #expect(error.code == .tlsSetup)
                #expect(error.message.contains(fragment), "\(error.message)")
            }
        }
        // A directory of PEM files (--capath) is read file by file.
        let trusted = try TLSSettings.load(caPath: pki.directory)
        guard case .only(let roots) = trusted.trust else {
            Issue.record("not only")
            return
        }
        #expect(roots.count >= 7)
    }

    @Test(.needsProxy) func throughARealProxyWithCONNECTAndNoProxyBypassesIt() async throws {
        let proxy = try Tinyproxy()
        defer { proxy.stop() }
        try await Self.withTLSServer { pki, server, fixture in
            var request = fixture.request(server)
            request.tls = try TLSSettings.load(caFile: pki.path("ca.crt"))
            request.proxy = try ProxySettings.environment(["https_proxy": proxy.url])
            let outcome = try await Download(request: request).run()
            guard case .completed(let result) = outcome else {
                Issue.record("\(outcome)")
                return
            }
            #expect(result.sha256 == Self.content.sha256Hex())
            #expect(proxy.connects.contains("127.0.0.1:\(server.port)"), "\(proxy.log)")

            let before = proxy.connects.count
            var direct = fixture.request(server, name: "direct.bin")
            direct.tls = request.tls
            direct.proxy = try ProxySettings.environment(["https_proxy": proxy.url, "no_proxy": "127.0.0.1"])
            guard case .completed = try await Download(request: direct).run() else {
                Issue.record("direct failed")
                return
            }
            #expect(proxy.connects.count == before)
        }
    }

    @Test(.needsProxy) func throughAProxyAnExpiredCertificateIsStillSaidToBeExpired() async throws {
        let proxy = try Tinyproxy()
        defer { proxy.stop() }
        try await Self.withTLSServer(certificate: "expired") { pki, server, fixture in
            var request = fixture.request(server)
            request.tls = try TLSSettings.load(caFile: pki.path("ca.crt"))
            request.proxy = .every(try ProxyServer.parse(proxy.url, origin: "--proxy"))
            let (error, _) = await Self.failure(request)
            let e = try #require(error)
            #expect(e.code == .tls)
            #expect(e.message.contains("expired on 2020-02-01"), "\(e.message)")
            #expect(e.message.contains("through the proxy http://127.0.0.1:\(proxy.port)"), "\(e.message)")
        }
    }

    @Test(.needsProxy) func aProxyThatWantsCredentialsFailsAtOnce() async throws {
        let proxy = try Tinyproxy(basicAuth: "fleet s3cret")
        defer { proxy.stop() }
        let fixture = Fixture()
        defer { fixture.remove() }
        try await Fixture.withServer(content: Self.content) { server in
            var request = fixture.request(server)
            request.proxy = .every(try ProxyServer.parse(proxy.url, origin: "--proxy"))
            let (error, _) = await Self.failure(request)
            let e = try #require(error)
            #expect(e.code == .proxy, "\(e)")
            #expect(e.message.contains("USER:PASSWORD"), "\(e.message)")

            request.proxy = .every(
                try ProxyServer.parse("http://fleet:wrong@127.0.0.1:\(proxy.port)", origin: "--proxy"))
            // tinyproxy answers wrong credentials with 401, not 407: a proxy's 4xx is its answer, said at once
            // with its status (an http:// URL goes as a proxied GET, no tunnel), never retried as an outage.
            request.maxRetries = 6
            let started = ContinuousClock.now
            let (refused, _) = await Self.failure(request)
            #expect(ContinuousClock.now - started < .seconds(5))
            #expect(refused?.code == .proxy || refused?.code == .httpStatus, "\(String(describing: refused))")
            #expect(refused?.message.contains("401") ?? false, "\(String(describing: refused))")
            #expect(refused?.message.contains("user name and password") ?? false, "\(String(describing: refused))")
            #expect(!(refused?.message.contains("wrong") ?? true))

            request.proxy = .every(
                try ProxyServer.parse("http://fleet:s3cret@127.0.0.1:\(proxy.port)", origin: "--proxy"))
            guard case .completed(let result) = try await Download(request: request).run() else {
                Issue.record("with credentials: not completed")
                return
            }
            #expect(result.sha256 == Self.content.sha256Hex())
        }
    }
}
