import Foundation
import TestSupport
import Testing

@testable import Transfer

/// Downloads from a real nginx (Debian's nginx-light), started with its own config on 127.0.0.1.
@Suite(.serialized, .needsNginx)
struct NginxTests {
    static let size = 24 << 20

    /// Writes `size` random bytes to `path` and returns their sha256.
    static func writeRandom(_ path: String, size: Int, seed: UInt64) throws -> String {
        let content = RangeContent.generated(size: Int64(size), seed: seed)
        _ = FileManager.default.createFile(atPath: path, contents: Data(content.allBytes()))
        return content.sha256Hex()
    }

    func withNginx(location: String = "", _ body: (Nginx, Fixture) async throws -> Void) async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let root = fixture.path("www")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let nginx = try Nginx(root: root, location: location)
        defer { nginx.stop() }
        try await body(nginx, fixture)
    }

    @Test func downloadsWithFourSegments() async throws {
        try await withNginx { nginx, fixture in
            let sha = try Self.writeRandom(nginx.root + "/object.bin", size: Self.size, seed: 11)
            var request = DownloadRequest(
                url: nginx.url("/object.bin"), destination: fixture.path("out.bin"), segments: 4)
            request.computeSHA256 = true
            request.chunkSize = 1 << 20
            let (outcome, events) = try await Fixture.runCollecting(Download(request: request))
            #expect(outcome.result?.sha256 == sha)
            #expect(Fixture.sha256(file: request.destination) == sha)
            #expect(events.contains { if case .started(_, _, 4) = $0 { return true } else { return false } })
        }
    }

    /// A URL's `user:password@` is sent as `Authorization: Basic`, as curl sends it (percent-escapes decoded),
    /// behind nginx's `auth_basic`; a wrong password is the server's 401, not a download.
    @Test func credentialsInTheURLAreSentAsBasicAuthorization() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let root = fixture.path("www")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try "mirror:{PLAIN}p@ss/w0rd\n".write(toFile: fixture.path("htpasswd"), atomically: true, encoding: .utf8)
        let sha = try Self.writeRandom(root + "/object.bin", size: 3 << 20, seed: 14)
        let nginx = try Nginx(
            root: root,
            location:
                "auth_basic \"mirror\"; auth_basic_user_file \(fixture.path("htpasswd")); location = /moved { return 302 /object.bin; }"
        )
        defer { nginx.stop() }
        let secret = nginx.url("/object.bin").replacingOccurrences(of: "://", with: "://mirror:p%40ss%2Fw0rd@")
        var request = DownloadRequest(url: secret, destination: fixture.path("out.bin"), segments: 2)
        request.computeSHA256 = true
        let (outcome, _) = try await Fixture.runCollecting(Download(request: request))
        #expect(outcome.result?.sha256 == sha)
        // nginx makes the Location absolute (http://127.0.0.1:PORT/object.bin): the same host keeps the login.
        var moved = DownloadRequest(
            url: secret.replacingOccurrences(of: "/object.bin", with: "/moved"), destination: fixture.path("moved.bin"))
        moved.computeSHA256 = true
        let (redirected, _) = try await Fixture.runCollecting(Download(request: moved))
        #expect(redirected.result?.sha256 == sha)

        var wrong = DownloadRequest(
            url: secret.replacingOccurrences(of: "w0rd", with: "nope"), destination: fixture.path("no.bin"))
        wrong.maxRetries = 0
        do {
            _ = try await Download(request: wrong).run()
            Issue.record("a wrong password downloaded")
        } catch {
            #expect(error.message.contains("401"), "\(error)")
            #expect(!error.message.contains("nope"), "the password is never shown: \(error)")
        }
    }

    /// A paused download's checkpoint keeps no password and no query (a presigned signature), and the same URL
    /// resumes from it; so does the URL signed again (another query).
    @Test func theCheckpointKeepsNoPasswordOrSignature() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let root = fixture.path("www")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try "mirror:{PLAIN}hunter2secret\n".write(toFile: fixture.path("htpasswd"), atomically: true, encoding: .utf8)
        let sha = try Self.writeRandom(root + "/object.bin", size: Self.size, seed: 15)
        let nginx = try Nginx(
            root: root,
            location: "limit_rate 16m; auth_basic \"mirror\"; auth_basic_user_file \(fixture.path("htpasswd"));")
        defer { nginx.stop() }
        let secret = nginx.url("/object.bin").replacingOccurrences(of: "://", with: "://mirror:hunter2secret@")
        var request = DownloadRequest(
            url: secret + "?X-Signature=sig0123456789", destination: fixture.path("out.bin"), segments: 2)
        request.computeSHA256 = true
        request.chunkSize = 1 << 20
        let (first, _) = try await Fixture.runPausing(Download(request: request), at: 4 << 20)
        #expect(first == .paused)
        let saved = try String(contentsOfFile: request.checkpointPath, encoding: .utf8)
        #expect(!saved.contains("hunter2secret") && !saved.contains("sig0123456789"), "\(saved)")
        #expect(saved.contains("<redacted>@127.0.0.1"), "\(saved)")
        // A checkpoint written before 2026-11-27 kept both whole: it resumes, and the next one keeps neither.
        var old = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: request.checkpointPath)))
                as? [String: Any])
        old["url"] = request.url
        old["source"] = request.url
        try JSONSerialization.data(withJSONObject: old).write(to: URL(fileURLWithPath: request.checkpointPath))
        let (again, _) = try await Fixture.runPausing(Download(request: request), at: 8 << 20)
        #expect(again == .paused)
        let rewritten = try String(contentsOfFile: request.checkpointPath, encoding: .utf8)
        #expect(!rewritten.contains("hunter2secret") && !rewritten.contains("sig0123456789"), "\(rewritten)")
        request.url = secret + "?X-Signature=signedagain"
        let (second, _) = try await Fixture.runCollecting(Download(request: request))
        #expect(second.result?.sha256 == sha)
        #expect((second.result?.resumedBytes ?? 0) >= 2 << 20, "\(String(describing: second.result))")
        #expect(Fixture.sha256(file: request.destination) == sha)
    }

    @Test func objectReplacedBetweenRunsGivesTheNewObject() async throws {
        try await withNginx(location: "limit_rate 16m;") { nginx, fixture in
            _ = try Self.writeRandom(nginx.root + "/object.bin", size: Self.size, seed: 12)
            var request = DownloadRequest(
                url: nginx.url("/object.bin"), destination: fixture.path("out.bin"), segments: 2)
            request.computeSHA256 = true
            request.chunkSize = 1 << 20
            let (first, _) = try await Fixture.runPausing(Download(request: request), at: 4 << 20)
            #expect(first == .paused)
            let newSHA = try Self.writeRandom(nginx.root + "/object.bin", size: Self.size + 1000, seed: 13)
            let (second, events) = try await Fixture.runCollecting(Download(request: request))
            #expect(second.result?.sha256 == newSHA)
            #expect(Fixture.sha256(file: request.destination) == newSHA)
            #expect(events.restarts >= 1)
        }
    }

    @Test func resumesAfterPause() async throws {
        try await withNginx(location: "limit_rate 16m;") { nginx, fixture in
            let sha = try Self.writeRandom(nginx.root + "/object.bin", size: Self.size, seed: 14)
            var request = DownloadRequest(
                url: nginx.url("/object.bin"), destination: fixture.path("out.bin"), segments: 2)
            request.computeSHA256 = true
            request.chunkSize = 1 << 20
            let (first, _) = try await Fixture.runPausing(Download(request: request), at: 6 << 20)
            #expect(first == .paused)
            let (second, events) = try await Fixture.runCollecting(Download(request: request))
            let result = try #require(second.result)
            #expect(result.sha256 == sha)
            #expect(result.resumedBytes > 0)
            #expect(events.restarts == 0)
        }
    }

    @Test func serverIgnoringRangeStillGivesACorrectFile() async throws {
        try await withNginx(location: "max_ranges 0;") { nginx, fixture in
            let sha = try Self.writeRandom(nginx.root + "/object.bin", size: Self.size, seed: 15)
            var request = DownloadRequest(url: nginx.url("/object.bin"), destination: fixture.path("out.bin"))
            request.computeSHA256 = true
            let (outcome, _) = try await Fixture.runCollecting(Download(request: request))
            #expect(outcome.result?.sha256 == sha)
            #expect(Fixture.sha256(file: request.destination) == sha)
        }
    }
}
