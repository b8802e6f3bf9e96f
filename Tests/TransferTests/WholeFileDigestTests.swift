import Foundation
import RangeServer
import TestSupport
import Testing

@testable import Transfer

/// The whole-file sha256 is computed only when someone uses it; the file is right either way.
@Suite(.serialized)
struct WholeFileDigestTests {
    static let content = RangeContent.generated(size: 6 << 20, seed: 77)

    @Test func noSHA256UnlessAsked() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        try await Fixture.withServer(content: Self.content) { server in
            var request = fixture.request(server, segments: 2)
            request.computeSHA256 = false
            #expect(!request.wantsSHA256)
            let (outcome, _) = try await Fixture.runCollecting(Download(request: request))
            let result = try #require(outcome.result)
            #expect(result.sha256 == nil)
            #expect(Fixture.sha256(file: request.destination) == Self.content.sha256Hex())
        }
    }

    @Test func anExpectedSHA256IsAlwaysComputedAndChecked() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        try await Fixture.withServer(content: Self.content) { server in
            var request = fixture.request(server)
            request.computeSHA256 = false
            request.expectedSHA256 = String(repeating: "0", count: 64)
            #expect(request.wantsSHA256)
            do throws(TransferError) {
                _ = try await Download(request: request).run()
                Issue.record("a wrong expected sha256 was accepted")
            } catch {
                #expect(error.code == .checksumMismatch)
                #expect(error.message.contains(Self.content.sha256Hex()))
            }
        }
    }

    /// A run that did not hash is paused; the resumed run asked for the hash seeds it from the kept
    /// pieces (read back from the file) and gets the whole file's sha256.
    @Test func aResumedRunHashesWhatAnEarlierRunWrote() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        try await Fixture.withServer(content: Self.content, faults: [.throttle(bytesPerSecond: 4 << 20)]) { server in
            var request = fixture.request(server, segments: 1)
            request.computeSHA256 = false
            let (first, _) = try await Fixture.runPausing(Download(request: request), at: 2 << 20)
            #expect(first == .paused)
            try await server.waitUntilIdle()
            server.setFaults([])
            request.computeSHA256 = true
            let (second, _) = try await Fixture.runCollecting(Download(request: request))
            let result = try #require(second.result)
            #expect(result.resumedBytes >= 1 << 20)
            #expect(result.sha256 == Self.content.sha256Hex())
        }
    }
}
