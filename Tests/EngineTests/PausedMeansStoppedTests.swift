import Engine
import Foundation
import Links
import MeterwiseClient
import Synchronization
import Testing

/// "paused" means stopped: once the event is out, no byte of the job is written, and the job says so.
@Suite struct PausedMeansStoppedTests {
    /// What a listener saw the instant a `paused` event reached it.
    struct AtPause: Sendable {
        var partial: Data
        var state: JobState
        var stopAfter: Duration
    }

    @Test func noByteIsWrittenAfterPausedOverFiftyPauses() async throws {
        let pauses = 50
        let harness = try await EngineHarness(policy: Policies.standard, size: 48 << 20, bytesPerSecond: 8 << 20)
        try await harness.use { h in
            let partial = h.directory.appendingPathComponent("file.bin.part")
            // A listener of its own reads the partial file the moment each `paused` arrives, before anything
            // else can happen.
            let seen = Mutex<[AtPause]>([])
            let stream = h.engine.events.subscribe(buffer: 100_000)
            let engine = h.engine
            let listener = Task {
                for await event in stream {
                    guard case let .paused(job, _, _, timing) = event else { continue }
                    let data = (try? Data(contentsOf: partial)) ?? Data()
                    let state = (try? await engine.status(job).job.state) ?? .failed
                    seen.withLock { $0.append(AtPause(partial: data, state: state, stopAfter: timing.stoppedAfter)) }
                }
            }
            defer { listener.cancel() }
            h.monitor.send(up: ["wlan0", "wwan0"], primary: "wlan0")
            let job = try await h.add()
            let resumeAfter = await h.engine.policy.defaults.resumeAfter
            for round in 1...pauses {
                #expect(await h.until { h.count(\.isStarted) == round }, "round \(round): no start")
                let before = h.engine.accounting.bytesByLink["wlan0", default: 0]
                #expect(await h.until { h.engine.accounting.bytesByLink["wlan0", default: 0] >= before + (48 << 10) })
                h.monitor.send(up: ["wlan0", "wwan0"], primary: "wwan0")
                #expect(await h.until { seen.withLock { $0.count } == round }, "round \(round): no paused event")
                // Nothing can arrive once every connection is closed: the file then is the file for good.
                #expect(await h.until { h.server.openConnections == 0 })
                let after = try Data(contentsOf: partial)
                let atPause = try #require(seen.withLock { $0.last })
                #expect(
                    atPause.state == .waiting, "round \(round): the job said \(atPause.state) with its paused event")
                #expect(atPause.partial == after, "round \(round): the partial file changed after the paused event")
                h.monitor.send(up: ["wlan0", "wwan0"], primary: "wlan0")
                // Back on Wi-Fi: it waits for stable links (on the manual clock), then starts again.
                #expect(await h.until { h.count { if case .waiting = $0 { true } else { false } } == round })
                h.clock.advance(by: resumeAfter)
            }
            let status = try await h.engine.status(job.id)
            // What was read and not kept (the pauses' in-flight bytes) is counted, and is less than what moved.
            let discarded = try #require(status.job.discardedBytes)
            #expect(discarded >= 0 && discarded < status.job.bytesFetched)
            #expect(
                status.job.bytesFetched - discarded <= status.job.bytesDone + (256 << 10) * Int64(pauses),
                "fetched \(status.job.bytesFetched), discarded \(discarded), done \(status.job.bytesDone)")
            #expect(await h.engine.stopLatency.count == pauses)
            let latencies = seen.withLock { $0.map(\.stopAfter) }.sorted()
            print(
                "decision -> stopped over \(pauses) pauses: p50 \(latencies[latencies.count / 2]), max \(latencies.last!), discarded \(discarded) B"
            )
        }
    }
}
