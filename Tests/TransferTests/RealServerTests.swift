import Foundation
import TestSupport
import Testing

@testable import Transfer

/// Issue 30 replayed against Debian's own servers, started by the tests on loopback ports: squid with its
/// stock access rules, lighttpd with its defaults, nginx as the origin behind squid. Each checks what the
/// server's access log says against the download's counts.
@Suite(.serialized)
struct RealServerTests {
    static let size = 32 << 20

    func root(_ fixture: Fixture) throws -> String {
        let root = fixture.path("www")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        return root
    }

    /// squid allows CONNECT only to port 443: an http:// download goes through it as an ordinary proxied GET
    /// (absolute URI, no tunnel), ranged and segmented, and squid logged sending at least what was fetched.
    @Test(.needsSquid, .needsNginx) func squidForwardsHttpDownloadsWithoutATunnel() async throws {
        try await behindSquid(seed: 30) { nginx, squid, fixture, sha in
            var request = DownloadRequest(url: nginx.url("/f.bin"), destination: fixture.path("out.bin"), segments: 4)
            request.computeSHA256 = true
            request.proxy = try ProxySettings.environment(["http_proxy": squid.url])
            let (outcome, events) = try await Fixture.runCollecting(Download(request: request))
            let result = try #require(outcome.result, "\(events.suffix(3))")
            #expect(result.sha256 == sha)
            #expect(events.contains { if case .started(_, _, 4) = $0 { return true } else { return false } })
            // squid writes its log line when a request ends: wait for all of them.
            var entries = squid.entries
            for _ in 0..<100 where entries.count < 4 {
                try await Task.sleep(for: .milliseconds(50))
                entries = squid.entries
            }
            #expect(!entries.contains { $0.method == "CONNECT" }, "\(entries)")
            let gets = entries.filter { $0.method == "GET" && $0.target == nginx.url("/f.bin") }
            #expect(gets.count >= 4, "\(entries)")
            #expect(gets.allSatisfy { $0.result.hasSuffix("/206") }, "\(entries)")
            #expect(result.bytesFetched + result.discardedBytes >= Int64(Self.size))
            #expect(
                result.bytesFetched == Int64(Self.size) - result.resumedBytes + result.refetchedBytes
                    + result.discardedBytes)
            // squid's sizes include each response's head (a few hundred bytes); bytes it sent into a connection that
            // was cut at a segment's end may not have been read (issue 26 bounds that).
            let logged = gets.reduce(Int64(0)) { $0 + $1.bytes }
            #expect(logged >= result.bytesFetched, "squid logged \(logged), fetched \(result.bytesFetched)")
        }
    }

    /// An https:// download through squid to a port other than 443: squid's 403 to CONNECT is its answer, said
    /// at once with its status and reason, not retried as an outage.
    @Test(.needsSquid) func squidsRefusedTunnelEndsTheDownloadAtOnceWithItsStatus() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let squid = try Squid()
        defer { squid.stop() }
        let port = try Nginx.freePort()
        var request = DownloadRequest(url: "https://127.0.0.1:\(port)/f.bin", destination: fixture.path("out.bin"))
        request.proxy = try ProxySettings.environment(["https_proxy": squid.url])
        let started = ContinuousClock.now
        let error: TransferError
        do {
            _ = try await Download(request: request).run()
            Issue.record("the download did not fail")
            return
        } catch let e {
            error = e
        }
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(error.code == .proxy, "\(error)")
        #expect(error.message.contains("403"), "\(error.message)")
        #expect(error.message.contains("ERR_ACCESS_DENIED"), "\(error.message)")
        #expect(error.message.contains("127.0.0.1:\(port)"), "\(error.message)")
        #expect(!Fixture.exists(fixture.path("out.bin")))
    }

    /// lighttpd answers 206 with a new ETag once the file changed: the download restarts from 0, and the
    /// restart is ranged and segmented again, its checkpoint says `accept_ranges: true`, and a pause after it
    /// keeps the partial.
    @Test(.needsLighttpd) func aRestartStaysResumableAgainstLighttpd() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let www = try root(fixture)
        let lighttpd = try Lighttpd(root: www)
        defer { lighttpd.remove() }
        _ = try NginxTests.writeRandom(www + "/f.bin", size: Self.size, seed: 31)
        var request = DownloadRequest(url: lighttpd.url("/f.bin"), destination: fixture.path("out.bin"), segments: 4)
        request.computeSHA256 = true
        request.rateLimit = 24 << 20
        let (first, _) = try await Fixture.runPausing(Download(request: request), at: 8 << 20)
        #expect(first == .paused)
        // The object changes on the server (a new mtime and new bytes: a new ETag).
        let newSHA = try NginxTests.writeRandom(www + "/f.bin", size: Self.size, seed: 32)
        let future = Date().addingTimeInterval(5)
        try FileManager.default.setAttributes([.modificationDate: future], ofItemAtPath: www + "/f.bin")
        let (second, secondEvents) = try await Fixture.runPausing(Download(request: request), at: 8 << 20)
        #expect(second == .paused)
        #expect(secondEvents.restarts == 1, "\(secondEvents.filter { if case .progress = $0 { false } else { true } })")
        #expect(
            secondEvents.contains { if case .started(_, 0, 4) = $0 { return true } else { return false } },
            "the restart runs four segments again")
        let checkpoint = try Checkpoint.decode(
            try Data(contentsOf: URL(fileURLWithPath: fixture.path("out.bin.part.checkpoint"))))
        #expect(checkpoint.acceptRanges)
        #expect(checkpoint.validators.etag != nil)
        let kept = checkpoint.bytesDone
        #expect(kept >= 4 << 20)

        request.rateLimit = nil
        let (third, thirdEvents) = try await Fixture.runCollecting(Download(request: request))
        #expect(thirdEvents.restarts == 0)
        let result = try #require(third.result)
        #expect(result.sha256 == newSHA)
        #expect(result.resumedBytes == kept)
        #expect(result.bytesFetched == Int64(Self.size) - kept + result.refetchedBytes + result.discardedBytes)
        lighttpd.stop()
        let entries = lighttpd.entries
        #expect(entries.allSatisfy { $0.status == 206 }, "\(entries)")
        #expect(entries.allSatisfy { $0.range.hasPrefix("bytes=") }, "\(entries)")
    }

    /// Apache sends a weak ETag for a file modified within the last second, a strong one after. The download
    /// that began in that second uses Last-Modified with If-Unmodified-Since (never If-Range, which Apache
    /// ignores for so recent a date, answering 200 to every segment) and takes the strong ETag when it comes:
    /// paused and resumed, every answer is a 206 and the partial is kept.
    @Test(.needsApache) func apachesWeakETagWindowKeepsTheDownloadResumable() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let www = try root(fixture)
        chmod(fixture.directory, 0o755)
        chmod(www, 0o755)
        let apache = try Apache(root: www)
        defer { apache.stop() }
        let sha = try NginxTests.writeRandom(www + "/f.bin", size: Self.size, seed: 35)
        chmod(www + "/f.bin", 0o644)
        var request = DownloadRequest(url: apache.url("/f.bin"), destination: fixture.path("out.bin"), segments: 4)
        request.computeSHA256 = true
        request.rateLimit = 16 << 20
        let (first, _) = try await Fixture.runPausing(Download(request: request), at: 8 << 20)
        #expect(first == .paused)
        request.rateLimit = nil
        let (second, events) = try await Fixture.runCollecting(Download(request: request))
        #expect(events.restarts == 0)
        let result = try #require(second.result)
        #expect(result.sha256 == sha)
        #expect(result.resumedBytes >= 8 << 20)
        let entries = apache.entries
        #expect(entries.count >= 5, "\(entries)")
        #expect(entries.allSatisfy { $0.status == 206 }, "\(entries)")
        #expect(entries.allSatisfy { $0.ifRange == "-" }, "\(entries)")
    }

    /// The issue's first case with the built binary, as a user runs it: `http_proxy=squid meterwise get
    /// http://…` succeeds with four ranged segments, and squid logged no CONNECT; an https:// URL to a port
    /// squid will not tunnel to exits 69 at once, saying squid's status.
    @Test(.needsSquid, .needsNginx, .needsBinary) func theBinaryThroughSquid() async throws {
        try await behindSquid(seed: 36) { nginx, squid, fixture, sha in
            let run = try TLSCommandTests.get(
                [nginx.url("/f.bin"), "-o", fixture.path("out.bin"), "--json", "--print-sha256"],
                environment: ["http_proxy": squid.url])
            #expect(run.status == 0, "\(run)")
            #expect(run.stdout.contains("\"proxy\":\"\(squid.url)\""), "\(run.stdout)")
            #expect(Fixture.sha256(file: fixture.path("out.bin")) == sha)
            #expect(!squid.entries.contains { $0.method == "CONNECT" }, "\(squid.entries)")

            let port = try Nginx.freePort()
            let refused = try TLSCommandTests.get(
                ["https://127.0.0.1:\(port)/f.bin", "-o", fixture.path("tls.bin")],
                environment: ["https_proxy": squid.url])
            #expect(refused.status == 69, "\(refused)")
            #expect(refused.elapsed < .seconds(10))
            #expect(refused.stderr.contains("403 Forbidden"), "\(refused.stderr)")
        }
    }

    /// nginx serving a random file as the origin, behind a squid; `body` gets both, the fixture and the
    /// file's sha256.
    func behindSquid(seed: UInt64, _ body: (Nginx, Squid, Fixture, String) async throws -> Void) async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let nginx = try Nginx(root: try root(fixture))
        defer { nginx.stop() }
        let squid = try Squid()
        defer { squid.stop() }
        let sha = try NginxTests.writeRandom(nginx.root + "/f.bin", size: Self.size, seed: seed)
        try await body(nginx, squid, fixture, sha)
    }
}
