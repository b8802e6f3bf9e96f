import Engine
import Foundation
import Lab
import Links
import MeterwiseClient
import Policy
import TestSupport
import Testing

/// `keep_free` (issue 25, part 4): on a 64 MiB tmpfs that keeps 16 MiB free, two 40 MiB jobs: one completes,
/// the other waits with the numbers and never meets ENOSPC; once the first file is removed, it completes.
@Suite(.serialized) struct KeepFreeTests {
    static let policy = """
        version: 1
        defaults: { resume_after: 1s, action: run, keep_free: 16MiB }
        """

    @Test(.needsRoot) func aSecondJobWaitsForSpaceAndNeverFailsWithENOSPC() async throws {
        let mount = FileManager.default.temporaryDirectory.appendingPathComponent("mw-keepfree-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: mount, withIntermediateDirectories: true)
        try Command.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", mount.path])
        defer {
            _ = try? Command.run(["umount", mount.path], allowFailure: true)
            try? FileManager.default.removeItem(at: mount)
        }
        let harness = try await EngineHarness(policy: Self.policy, size: 40 << 20, bytesPerSecond: 10 << 20)
        try await harness.use { h in
            h.monitor.send(up: ["wlan0"], primary: "wlan0")
            let sha = h.server.content.sha256Hex()
            let first = try await h.engine.add(
                JobSpec(url: h.server.url("/a.bin"), destination: mount.path + "/a.bin", sha256: sha))
            #expect(try await h.until { try await h.engine.status(first.id).job.totalBytes == 40 << 20 })
            let second = try await h.engine.add(
                JobSpec(url: h.server.url("/b.bin"), destination: mount.path + "/b.bin", sha256: sha))
            #expect(try await h.until { try await h.state(second.id) == .waiting })
            let waiting = try await h.engine.status(second.id).job.reason ?? ""
            #expect(waiting.hasPrefix("needs "), "\(waiting)")
            #expect(waiting.contains("more free space on \(mount.path) ("), "\(waiting)")
            #expect(waiting.contains("16.0 MiB kept free") || waiting.contains("16 MiB kept free"), "\(waiting)")
            #expect(waiting.contains("statvfs"))
            #expect(try await h.until(timeout: .seconds(30)) { try await h.state(first.id) == .completed })
            // The first file now holds 40 MiB of 64: the second still waits, rechecked on the clock.
            h.clock.advance(by: .seconds(3))
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await h.state(second.id) == .waiting)
            try FileManager.default.removeItem(atPath: mount.path + "/a.bin")
            h.clock.advance(by: .seconds(3))
            #expect(try await h.until(timeout: .seconds(30)) { try await h.state(second.id) != .waiting })
            #expect(!(try await h.engine.status(second.id).job.reason ?? "").contains("statvfs"))
            #expect(try await h.until(timeout: .seconds(30)) { try await h.state(second.id) == .completed })
            let done = try await h.engine.status(second.id).job
            #expect(done.sha256 == sha)
            #expect(!h.events.contains { if case .failed = $0 { true } else { false } })
        }
    }

    @Test(arguments: [("16MiB", KeepFree.bytes(16 << 20)), ("10%", .basisPoints(1000)), ("12.5%", .basisPoints(1250))])
    func keepFreeValues(_ row: (String, KeepFree)) throws {
        #expect(KeepFree.parse(row.0) == row.1)
        let policy = try PolicySet.parse(files: [
            (name: "p.yaml", text: "version: 1\ndefaults: { keep_free: \"\(row.0)\" }\n")
        ])
        #expect(policy.defaults.keepFree == row.1)
    }

    @Test func badKeepFreeIsAnErrorWithItsLine() {
        for bad in ["101%", "-1%", "lots", "10.123%"] {
            do {
                _ = try PolicySet.parse(files: [
                    (name: "p.yaml", text: "version: 1\ndefaults:\n  keep_free: \"\(bad)\"\n")
                ])
                Issue.record("\(bad) was accepted")
            } catch {
                #expect("\(error)".contains("p.yaml:3"), "\(error)")
                #expect("\(error)".contains("bad keep_free"), "\(error)")
            }
        }
    }

    @Test func theGateSaysWhatIsMissing() {
        let facts = SpaceFacts(path: "/srv", free: 800 << 20, size: 100 << 30, needed: 1 << 30, reserved: 0)
        let problem = SpaceGate.problem(facts, keepFree: .bytes(2 << 30))
        #expect(problem?.hasPrefix("needs 2.") == true, "\(String(describing: problem))")
        #expect(problem?.contains("on /srv (800") == true)
        #expect(SpaceGate.problem(facts, keepFree: .bytes(0))?.hasPrefix("needs 224") == true)
        let roomy = SpaceFacts(path: "/srv", free: 10 << 30, size: 100 << 30, needed: 1 << 30, reserved: 4 << 30)
        #expect(SpaceGate.problem(roomy, keepFree: .basisPoints(500)) == nil)
        #expect(SpaceGate.problem(roomy, keepFree: .basisPoints(1000)) != nil)
    }
}
