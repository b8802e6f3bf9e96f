import Foundation
import RangeServer
import TestSupport
import Testing

@testable import Transfer

/// A captive portal never costs a byte of progress (issue 25, part 1): its answer is told from the object's,
/// the partial and its checkpoint stay exactly as they were, nothing of the page is written, `get` exits 76
/// with the portal's URL, and once the portal is gone the download resumes with nothing fetched twice.
@Suite(.serialized)
struct CaptivePortalTests {
    static let size: Int64 = 16 << 20
    static let content = RangeContent.generated(size: size, seed: 25)

    static func bytes(_ path: String) -> Data? { FileManager.default.contents(atPath: path) }

    /// The issue's transcript: a one-segment `get` paused midway, then the Wi-Fi's portal answers every request
    /// with 302 → /login → 200 text/html.
    @Test(arguments: [true, false])
    func theTranscriptKeepsThePartialAndSaysWhoAnswered(_ redirect: Bool) async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: CrashTests.binary),
            "\(CrashTests.binary) is missing: run `swift build` before `swift test`")
        let fixture = Fixture()
        defer { fixture.remove() }
        try await Fixture.withServer(content: Self.content, faults: [.throttle(bytesPerSecond: 8 << 20)]) { server in
            let out = fixture.path("out.bin")
            let arguments = ["get", server.url("/f.bin"), "-o", out, "--segments", "1"]
            let (paused, _) = try await GetCommandTests.run(arguments, interruptAfter: .milliseconds(900))
            #expect(paused == 130)
            try await server.waitUntilIdle()
            let partialPath = out + ".part"
            let checkpointPath = out + ".part.checkpoint"
            let partial = try #require(Self.bytes(partialPath))
            let checkpoint = try #require(Self.bytes(checkpointPath))
            let cp = try Checkpoint.decode(checkpoint)
            #expect(cp.contentType == "application/octet-stream")
            #expect(cp.source == server.url("/f.bin"))
            #expect(cp.bytesDone > 0 && cp.bytesDone < Self.size)

            server.setFaults([.captivePortal(redirect: redirect)])
            let portal = try BinaryRun.run(arguments)
            #expect(portal.status == 76, "\(portal.stderr)")
            let said =
                redirect
                ? "a captive portal or proxy answered instead of the server (redirected to \(server.url("/login")))"
                : "a captive portal or proxy answered instead of the server (answered in place)"
            #expect(portal.stderr.lowercased().contains(said.lowercased()), "\(portal.stderr)")
            #expect(!portal.stderr.contains("Restarting"))
            #expect(!Fixture.exists(out))
            #expect(Self.bytes(partialPath) == partial, "the partial file changed")
            #expect(Self.bytes(checkpointPath) == checkpoint, "the checkpoint changed")

            server.setFaults([])
            let done = try BinaryRun.run(arguments + ["--json"])
            #expect(done.status == 0, "\(done.stderr)")
            #expect(Fixture.sha256(file: out) == Self.content.sha256Hex())
            let final = done.stdout.split(separator: "\n").last.map(String.init) ?? ""
            #expect(final.contains("\"bytes_fetched\":\(Self.size - cp.bytesDone)"), "\(final)")
            #expect(final.contains("\"refetched_bytes\":0"), "\(final)")
        }
    }

    /// A first download through the portal (redirected, in place, or a 511) creates no file at all.
    @Test(arguments: [
        RangeFault.captivePortal(redirect: true), .captivePortal(redirect: false), .networkAuthenticationRequired,
    ])
    func aFirstDownloadThroughAPortalCreatesNoFile(_ fault: RangeFault) async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        try await Fixture.withServer(content: Self.content, faults: [fault]) { server in
            var request = fixture.request(server, segments: 4)
            request.url = server.url("/f.bin")
            do {
                _ = try await Download(request: request).run()
                Issue.record("the portal's page was taken for the object")
            } catch let error as TransferError {
                #expect(error.code == .intercepted, "\(error)")
                #expect(error.message.contains("captive portal or proxy answered instead of the server"))
            }
            let left = try FileManager.default.contentsOfDirectory(atPath: fixture.directory)
            #expect(left.isEmpty, "left behind: \(left)")
        }
    }

    /// A daemon's download waits the portal out with back-off, saying why, and completes once it is gone, with
    /// nothing fetched twice; four segments, the portal appearing midway.
    @Test func aWaitingDownloadResumesOnceThePortalIsGone() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        try await Fixture.withServer(content: Self.content, faults: [.throttle(bytesPerSecond: 2 << 20)]) { server in
            var request = fixture.request(server, segments: 4)
            request.url = server.url("/f.bin")
            let (first, _) = try await Fixture.runPausing(Download(request: request), at: Self.size / 3)
            #expect(first == .paused)
            try await server.waitUntilIdle()
            let partial = try #require(Self.bytes(fixture.path() + ".part"))

            let asked = server.requests.count
            server.setFaults([.captivePortal(redirect: true)])
            request.waitOutInterception = true
            request.retryCap = .milliseconds(200)
            let download = Download(request: request)
            let events = Task { await Fixture.collect(download.events) }
            let run = Task { try await download.run() }
            #expect(
                await eventually(timeout: .seconds(10)) { server.requests.count >= asked + 6 },
                "the portal was not asked again")
            #expect(Self.bytes(fixture.path() + ".part") == partial, "the portal's page reached the partial file")
            server.setFaults([])
            download.retryNow()
            let result = try #require(try await run.value.result)
            #expect(result.sha256 == Self.content.sha256Hex())
            #expect(result.refetchedBytes == 0)
            // The portal's pages were received and not kept, and so are the segments' ends read past their ranges
            // (issue 26 bounds those); nothing of it was written, and nothing was fetched twice.
            #expect(result.discardedBytes < 1 << 20, "\(result.discardedBytes)")
            let all = await events.value
            #expect(all.restarts == 0)
            #expect(
                all.contains {
                    if case .retrying(_, _, let reason) = $0 {
                        return reason
                            == "a captive portal or proxy answered instead of the server (redirected to \(server.url("/login")))"
                    }
                    return false
                })
        }
    }
}
