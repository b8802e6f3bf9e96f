import Foundation
import RangeServer
import TestSupport
import Testing

@testable import Transfer

/// `no_proxy` is read for every URL a download asks, a redirect's too: a redirect may take a download off
/// its proxy or onto it.
@Suite(.serialized) struct RedirectProxyTests {
    /// The object, a redirector on 127.0.0.1 that sends to it under `host`, and tinyproxy.
    struct Setup {
        let proxy: Tinyproxy
        let server: RangeServer
        let redirector: Nginx
        let content: RangeContent
        let root: String

        init(target host: String, seed: UInt64) async throws {
            proxy = try Tinyproxy()
            content = RangeContent.generated(size: 2 << 20, seed: seed)
            server = try await RangeServer.start(content: content)
            root = NSTemporaryDirectory() + "mw-redirect-\(UInt32.random(in: 0...UInt32.max))"
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            redirector = try Nginx(root: root, location: "return 302 http://\(host):\(server.port)/file;")
        }

        func stop() async {
            proxy.stop()
            redirector.stop()
            try? FileManager.default.removeItem(atPath: root)
            try? await server.shutdown()
        }

        /// The absolute-form requests the proxy forwarded (`GET http://host:port/path`).
        var forwarded: [String] {
            proxy.log.split(separator: "\n").compactMap { line in
                guard let r = line.range(of: "GET http://") else { return nil }
                return String(line[r.lowerBound...].split(separator: " ").dropFirst().first ?? "")
            }
        }
    }

    /// Through the proxy to the redirector, then direct to the host `no_proxy` names.
    @Test(.needsProxy, .needsNginx) func aRedirectToANoProxyHostGoesDirect() async throws {
        let setup = try await Setup(target: "localhost", seed: 61)
        let fixture = Fixture()
        defer { fixture.remove() }
        var request = DownloadRequest(url: setup.redirector.url("/f"), destination: fixture.path("out.bin"))
        request.proxy = try ProxySettings.environment(["http_proxy": setup.proxy.url, "no_proxy": "localhost"])
        let (outcome, _) = try await Fixture.runCollecting(Download(request: request))
        let forwarded = setup.forwarded
        await setup.stop()
        #expect(outcome.result != nil)
        #expect(Fixture.sha256(file: fixture.path("out.bin")) == setup.content.sha256Hex())
        #expect(forwarded.contains { $0.hasPrefix("http://127.0.0.1:\(setup.redirector.port)/") }, "\(forwarded)")
        #expect(!forwarded.contains { $0.contains("localhost") }, "the no_proxy host went through the proxy")
        #expect(setup.server.requestCount >= 1)
    }

    /// Direct to the redirector (in `no_proxy`), then through the proxy to a host it does not name.
    @Test(.needsProxy, .needsNginx) func aRedirectFromANoProxyHostGoesThroughTheProxy() async throws {
        let setup = try await Setup(target: "localhost", seed: 62)
        let fixture = Fixture()
        defer { fixture.remove() }
        var request = DownloadRequest(url: setup.redirector.url("/f"), destination: fixture.path("out.bin"))
        request.proxy = try ProxySettings.environment(["http_proxy": setup.proxy.url, "no_proxy": "127.0.0.1"])
        let (outcome, _) = try await Fixture.runCollecting(Download(request: request))
        let forwarded = setup.forwarded
        await setup.stop()
        #expect(outcome.result != nil)
        #expect(Fixture.sha256(file: fixture.path("out.bin")) == setup.content.sha256Hex())
        #expect(!forwarded.contains { $0.contains("127.0.0.1") }, "the no_proxy host went through the proxy")
        #expect(forwarded.contains { $0.hasPrefix("http://localhost:\(setup.server.port)/") }, "\(forwarded)")
    }
}
