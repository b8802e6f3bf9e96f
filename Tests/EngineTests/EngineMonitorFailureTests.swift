import Engine
import Foundation
import Links
import TestSupport
import Testing

/// A link monitor that fails for good stops the engine with an error (so a daemon exits non-zero and is
/// restarted) after pausing every transfer with its checkpoint flushed; it never leaves the engine up with
/// every job paused forever.
@Suite(.serialized) struct EngineMonitorFailureTests {
    @Test func aMonitorThatFailsForGoodEndsRunWithAnErrorAfterPausingTransfers() async throws {
        let h = try await EngineHarness(policy: Policies.standard, size: 8 << 20, bytesPerSecond: 1 << 20)
        h.monitor.send(up: ["wlan0", "wwan0"], primary: "wlan0")
        let job = try await h.add()
        #expect(await h.until { h.engine.accounting.bytesByLink["wlan0", default: 0] > 256 << 10 })

        h.monitor.fail(LinksError(.monitorFailed, "netlink gave up (test)"))
        let ended = await h.runner.result
        let record = try await h.engine.store.jobs().first { $0.id == job.id }
        let connections = h.server.openConnections
        await h.close()
        guard case .failure(let error) = ended else {
            Issue.record("run() returned normally after the monitor failed for good")
            return
        }
        let engineError = try #require(error as? EngineError, "\(error)")
        #expect(engineError.code == .linkMonitor)
        #expect(engineError.description.contains("netlink gave up (test)"))
        #expect(engineError.message.contains("restarts the daemon"))
        // The transfer was paused with its checkpoint, not lost: the job waits to resume on restart.
        #expect(record?.state == .queued || record?.state == .waiting, "\(String(describing: record?.state))")
        #expect(connections == 0)
    }
}
