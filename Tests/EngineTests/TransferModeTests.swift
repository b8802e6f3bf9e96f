import Engine
import Foundation
import Links
import MeterwiseClient
import Policy
import Testing

/// Which transfers give way (docs/background.md): daemon jobs are background unless the job or the policy
/// says foreground; the job's own word comes first.
@Suite(.serialized) struct TransferModeTests {
    static let policy = """
        version: 1
        rules:
          - name: urgent
            when: { tags: [urgent] }
            action: run
            mode: foreground
          - name: rest
            action: run
        """

    func add(_ h: EngineHarness, _ name: String, tags: [String] = [], mode: String? = nil) async throws -> JobRecord {
        var spec = JobSpec(
            url: h.server.url("/\(name)"), destination: h.directory.appendingPathComponent(name).path, tags: tags)
        spec.mode = mode
        return try await h.engine.add(spec)
    }

    @Test func jobsAreBackgroundUnlessTheJobOrARuleSaysForeground() async throws {
        let h = try await EngineHarness(policy: Self.policy, size: 64 << 20, bytesPerSecond: 1 << 20)
        try await h.use { h in
            h.monitor.send(up: ["wlan0"], primary: "wlan0")
            let plain = try await add(h, "plain.bin")
            let urgent = try await add(h, "urgent.bin", tags: ["urgent"])
            let own = try await add(h, "own.bin", mode: "foreground")
            let insisting = try await add(h, "insisting.bin", tags: ["urgent"], mode: "background")
            // Three run at once (the engine's default); the fourth waits its turn, and says its mode all the same.
            for job in [plain, urgent, own] {
                #expect(try await h.until { try await h.state(job.id) == .running })
            }
            #expect(try await h.engine.status(plain.id).mode == "background")
            #expect(try await h.engine.status(urgent.id).mode == "foreground")
            #expect(try await h.engine.status(own.id).mode == "foreground")
            #expect(try await h.engine.status(insisting.id).mode == "background")
            // The running transfers carry it: progress events say their mode.
            let modes: @Sendable (String) -> [Bool] = { id in
                h.events.compactMap { event -> Bool? in
                    if case let .progress(job, progress) = event, job == id { progress.backgroundMode } else { nil }
                }
            }
            #expect(await h.until { !modes(plain.id).isEmpty && !modes(urgent.id).isEmpty })
            #expect(modes(plain.id).last == true)
            #expect(modes(urgent.id).last == false)
        }
    }

    @Test func aBadModeIsRefusedWithTheFix() async throws {
        let h = try await EngineHarness(policy: Self.policy)
        try await h.use { h in
            await #expect(throws: EngineError.self) { _ = try await add(h, "x.bin", mode: "turbo") }
            var spec = JobSpec(url: h.server.url("/x.bin"), destination: h.directory.appendingPathComponent("x").path)
            spec.mode = "turbo"
            #expect(spec.problem?.contains("mode must be background or foreground") == true)
        }
    }
}
