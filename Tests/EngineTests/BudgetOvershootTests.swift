import Engine
import Foundation
import MeterwiseClient
import Policy
import Testing
import Transfer

/// A budget is overshot by no more than what was in flight when it ran out (docs/policy.md, "Budgets"):
/// once the job's budget is used up its connections read nothing more, so past the budget only the
/// buffers already in hand are counted — at most one receive buffer (`TransferClient.receiveAllocation`,
/// 128 KiB) per connection.
@Suite(.serialized) struct BudgetOvershootTests {
    static let policy = """
        version: 1
        defaults: { resume_after: 5s, action: pause }
        rules:
          - name: cell-allowance
            when: { metered: yes }
            action: run
            budget: { name: cell, bytes: 1MiB, period: daily }
        """
    static let segments = 4
    static let bound: Int64 = Int64(segments) * Int64(TransferClient.receiveAllocation)

    /// 20 runs at loopback speed (no throttle: the worst case for a late pause), 4 segments each.
    @Test func overshootStaysWithinWhatWasInFlight() async throws {
        var overshoots: [Int64] = []
        for _ in 0..<20 {
            let h = try await EngineHarness(
                policy: Self.policy, size: 16 << 20, bytesPerSecond: nil,
                tune: { request in
                    request.segments = Self.segments
                })
            try await h.use { h in
                h.monitor.send(up: ["wwan0"], primary: "wwan0")
                let job = try await h.add(allowMetered: true)
                #expect(try await h.until { try await h.state(job.id) == .waiting })
                // The transfer has stopped: nothing more may be counted after the pause.
                #expect(try await h.until { try await h.engine.status(job.id).link == nil })
                let used = h.engine.accounting.usage.bytes.values.max() ?? 0
                overshoots.append(used - (1 << 20))
                let status = try await h.engine.status(job.id)
                #expect(status.job.reason?.hasPrefix("budget cell is used up") == true, "\(status.job.reason ?? "")")
                #expect(status.heldBy == "cell-allowance: budget cell is used up")
            }
        }
        print("BudgetOvershootTests: overshoot per run (bytes) \(overshoots), bound \(Self.bound)")
        #expect(overshoots.allSatisfy { $0 >= 0 && $0 <= Self.bound }, "\(overshoots)")
    }
}
