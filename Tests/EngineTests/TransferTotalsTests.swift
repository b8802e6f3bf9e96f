import Engine
import Foundation
import Links
import MeterwiseClient
import Testing

/// The counts a job shows and the ones `/metrics` sums are the same counts (docs/get.md, "Counts"): a job
/// paused twice by the policy and then completed fetched its size plus what it discarded, and the engine's
/// totals say exactly what the job says.
@Suite struct TransferTotalsTests {
    @Test func aJobsCountsAndTheMetricsTotalsAgree() async throws {
        let size: Int64 = 24 << 20
        let harness = try await EngineHarness(policy: Policies.standard, size: size, bytesPerSecond: 8 << 20)
        try await harness.use { h in
            h.monitor.send(up: ["wlan0", "wwan0"], primary: "wlan0")
            let job = try await h.add()
            let resumeAfter = await h.engine.policy.defaults.resumeAfter
            for round in 1...2 {
                #expect(await h.until { h.count(\.isStarted) == round })
                let before = h.engine.accounting.bytesByLink["wlan0", default: 0]
                #expect(await h.until { h.engine.accounting.bytesByLink["wlan0", default: 0] >= before + (2 << 20) })
                h.monitor.send(up: ["wlan0", "wwan0"], primary: "wwan0")
                #expect(await h.until { h.count(\.isPaused) == round })
                h.monitor.send(up: ["wlan0", "wwan0"], primary: "wlan0")
                #expect(await h.until { h.count { if case .waiting = $0 { true } else { false } } == round })
                h.clock.advance(by: resumeAfter)
            }
            #expect(try await h.until(timeout: .seconds(60)) { try await h.state(job.id) == .completed })
            let record = try await h.engine.status(job.id).job
            let discarded = record.discardedBytes ?? 0
            #expect(record.bytesFetched == size + discarded + record.refetchedBytes)
            let totals = await h.engine.totals
            #expect(totals.fetched == record.bytesFetched)
            #expect(totals.discarded == discarded)
            #expect(totals.refetched == record.refetchedBytes)
            let text = await Metrics.render(engine: h.engine)
            #expect(text.contains("meterwise_transfer_fetched_bytes_total \(record.bytesFetched)\n"), "\(text)")
            #expect(text.contains("meterwise_transfer_discarded_bytes_total \(discarded)\n"), "\(text)")
        }
    }
}
