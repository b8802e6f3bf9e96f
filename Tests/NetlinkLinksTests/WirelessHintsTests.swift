import Links
import Synchronization
import TestSupport
import Testing

@testable import NetlinkLinks

/// The nl80211 hint source on the machine the tests run on. Without nl80211 (no cfg80211: this container,
/// CI) it yields one empty value, ends, and logs one debug line; with nl80211 it runs and says so.
@Suite struct WirelessHintsTests {
    @Test func yieldsAtOnceAndEndsQuietlyWithoutNl80211() async throws {
        let recorder = LogRecorder()
        let values = Mutex<[LinkHints]>([])
        let ended = Atomic<Bool>(false)
        let consumer = Task {
            for await hints in WirelessHints(logger: recorder.logger).hints() { values.withLock { $0.append(hints) } }
            ended.store(true, ordering: .releasing)
        }
        defer { consumer.cancel() }
        #expect(await eventually(timeout: .seconds(5)) { !values.withLock { $0.isEmpty } }, "no first value")
        let first = try #require(values.withLock { $0.first })
        if first.sources.isEmpty {
            // No nl80211 here: exactly one empty value, the stream ends, one debug line and nothing louder.
            let didEnd = await eventually(timeout: .seconds(5)) { ended.load(ordering: .acquiring) }
            #expect(didEnd, "the stream did not end")
            #expect(values.withLock { $0 } == [LinkHints.none])
            let logged = recorder.entries.withLock { $0 }
            #expect(logged.count == 1)
            #expect(logged.allSatisfy { $0.level == .debug })
        } else {
            // nl80211 runs here: the source says so, and follows until the consumer goes away.
            #expect(first.sources == ["nl80211"])
            #expect(recorder.entries.withLock { $0 }.allSatisfy { $0.level <= .debug })
            consumer.cancel()
            #expect(await eventually(timeout: .seconds(5)) { ended.load(ordering: .acquiring) }, "did not stop")
        }
    }
}
