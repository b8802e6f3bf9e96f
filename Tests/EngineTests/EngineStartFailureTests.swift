import Engine
import Foundation
import MeterwiseClient
import TestSupport
import Testing

/// A queued job that cannot start (its CA file was removed after `add`) fails alone: the jobs decided
/// after it in the same pass, sharing its decision, still get theirs, and it takes no transfer slot.
@Suite(.serialized)
struct EngineStartFailureTests {
    static let policy = """
        version: 1
        rules:
          - name: media-anywhere
            when: { tags: [media] }
            action: run
        defaults:
          action: run
        """

    @Test(.enabled(if: TestPKI.unavailableReason == nil, "\(TestPKI.unavailableReason ?? "")"))
    func aJobThatCannotStartFailsAloneAndTakesNoSlot() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let h = try await EngineHarness(policy: Self.policy, bytesPerSecond: 256 << 10)
        let ca = h.directory.appendingPathComponent("ca.crt").path
        try FileManager.default.copyItem(atPath: pki.path("ca.crt"), toPath: ca)
        // The first of its class and priority: the pass gives it the class's decision before the others.
        var broken = JobSpec(
            url: h.server.url("/broken.bin"), destination: h.directory.appendingPathComponent("broken.bin").path,
            priority: 5, tags: ["os"])
        broken.caFile = ca
        let failing = try await h.engine.add(broken)
        var others: [String] = []
        for name in ["a", "b", "c"] {
            others.append(
                try await h.engine.add(
                    JobSpec(
                        url: h.server.url("/\(name).bin"),
                        destination: h.directory.appendingPathComponent("\(name).bin").path,
                        priority: 5, tags: ["os"])
                ).id)
        }
        let media = try await h.engine.add(
            JobSpec(
                url: h.server.url("/m.bin"), destination: h.directory.appendingPathComponent("m.bin").path,
                tags: ["media"])
        ).id
        let queued = others
        try FileManager.default.removeItem(atPath: ca)
        h.monitor.send(up: ["wlan0"], primary: "wlan0")

        #expect(
            await h.until { (try? await h.state(failing.id)) == .failed }, "the job without its CA file did not fail")
        let status = try await h.engine.status(failing.id)
        #expect(status.job.error?.contains(ca) == true, "\(status.job.error ?? "no error")")
        // Three slots: the three other jobs of its class run; the failed one took none.
        #expect(
            await h.until {
                var running = 0
                for id in queued where (try? await h.state(id)) == .running { running += 1 }
                return running == 3
            }, "the jobs after the failed one did not all start")
        #expect(try await h.state(media) == .queued)
        #expect(try await h.engine.status(others[0]).job.rule == nil)
        #expect(try await h.engine.status(media).job.rule == "media-anywhere")
        await h.close()
    }
}
