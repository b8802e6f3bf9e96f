import Foundation
import RangeServer
import TestSupport
import Testing

@testable import Transfer

/// A pause keeps what the kernel holds, counts what it throws away, and the resume fetches nothing twice.
@Suite(.serialized)
struct PauseAccountingTests {
    let start = ContinuousClock.now

    @Test func theDrainReadsUpToWhatTheKernelHeld() {
        let drain = PauseDrain(started: start, target: 10 << 20)
        // Short of the target: go on, even when nothing arrived for a while.
        #expect(!drain.isOver(now: start + .milliseconds(10), read: 9 << 20, lastReceive: start))
        // Target read, but a buffer just reached the segments (NIO may hold more): go on for `quiet`.
        #expect(!drain.isOver(now: start + .milliseconds(10), read: 10 << 20, lastReceive: start + .microseconds(9800)))
        #expect(drain.isOver(now: start + .milliseconds(12), read: 10 << 20, lastReceive: start + .milliseconds(10)))
    }

    @Test func theDrainIsBounded() {
        let drain = PauseDrain(started: start, target: .max)
        #expect(!drain.isOver(now: start + PauseDrain.longest - .milliseconds(1), read: 0, lastReceive: start))
        #expect(drain.isOver(now: start + PauseDrain.longest, read: 0, lastReceive: start + PauseDrain.longest))
    }
    /// Unthrottled on loopback, the client is the slow side, so the kernel holds megabytes at the pause:
    /// they are read and kept, not thrown away. Nothing counted as thrown away can exceed what the server
    /// sent beyond what was kept, and the resumed run fetches nothing twice.
    @Test func aPauseCountsWhatItThrowsAwayAndTheResumeFetchesNothingTwice() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let content = RangeContent.generated(size: 48 << 20, seed: 91)
        try await Fixture.withServer(content: content) { server in
            let request = fixture.request(server, segments: 2)
            let (first, events) = try await Fixture.runPausing(Download(request: request), at: 8 << 20)
            #expect(first == .paused)
            let paused = try #require(
                events.compactMap { event -> DownloadProgress? in
                    if case .paused(let p) = event { return p } else { return nil }
                }.last)
            try await server.waitUntilIdle()
            let servedFirst = server.bytesServed
            #expect(paused.discardedBytes >= 0)
            #expect(paused.discardedBytes <= 1 << 20, "the kernel's buffers were thrown away, not read")
            #expect(paused.discardedBytes <= servedFirst - paused.bytesDone)
            print("pause: done \(paused.bytesDone), served \(servedFirst), discarded \(paused.discardedBytes)")

            let (second, _) = try await Fixture.runCollecting(Download(request: request))
            let result = try #require(second.result)
            #expect(result.sha256 == content.sha256Hex())
            #expect(result.resumedBytes == paused.bytesDone)
            // Nothing the pause kept is fetched again; what the resumed run received beyond the rest of the
            // object (a segment's buffer past a range another segment took over) is counted as discarded
            // (within the estimate of response heads).
            print(
                "resume: fetched \(result.bytesFetched) for \(content.size - paused.bytesDone), discarded \(result.discardedBytes)"
            )
            #expect(result.bytesFetched >= content.size - paused.bytesDone)
            #expect(result.bytesFetched - (content.size - paused.bytesDone) <= result.discardedBytes + 1024)
        }
    }
}
