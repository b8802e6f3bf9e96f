import Engine
import Foundation
import Links
import MeterwiseClient
import RangeServer
import TestSupport
import Testing

/// A daemon job with several sources (docs/mirrors.md, "Links and preferences"): a source reached over a link
/// the policy does not let the job use gets no request, and under `prefer:` the sources it does not name
/// stand by while a preferred one serves.
@Suite(.serialized) struct SourceChoiceTests {
    static let policy = """
        version: 1
        defaults: { resume_after: 1s, action: pause }
        rules:
          - name: home
            when: { metered: no }
            action: run
            prefer: ["127.0.0.3"]
        """

    /// wlan0 (primary, unmetered) and wwan0 (metered), each with a default route; wwan0's own subnet holds
    /// 127.0.0.2, so a source there is reached over wwan0.
    static var snapshot: LinkSnapshot {
        var s = TestSnapshots.radios(up: ["wlan0", "wwan0"], primary: "wlan0")
        if let i = s.links.firstIndex(where: { $0.name == "wwan0" }) { s.links[i].ipv4 = ["127.0.0.2/32"] }
        return s
    }

    @Test func aSourceOverAForbiddenLinkGetsNothingAndAnUnpreferredOneStandsBy() async throws {
        let h = try await EngineHarness(policy: Self.policy)
        try await h.use { h in
            let content = RangeContent.generated(size: 8 << 20, seed: 7)
            let cell = try await RangeServer.start(host: "127.0.0.2", content: content)
            let preferred = try await RangeServer.start(
                host: "127.0.0.3", content: content, faults: [.throttle(bytesPerSecond: 8 << 20)])
            defer {
                Task {
                    try? await cell.shutdown()
                    try? await preferred.shutdown()
                }
            }
            h.monitor.send(Self.snapshot)
            var spec = JobSpec(url: h.server.url(), destination: h.directory.appendingPathComponent("f.bin").path)
            spec.mirrors = [cell.url(), preferred.url()]
            let job = try await h.engine.add(spec)
            #expect(try await h.until(timeout: .seconds(30)) { try await h.state(job.id) == .completed })
            #expect(cell.requestCount == 0, "the source over wwan0 was asked")
            #expect(h.server.requestCount == 1, "the source standing by served more than its probe")
            #expect(preferred.requestCount >= 2)
            let status = try await h.engine.status(job.id)
            let sources = try #require(status.job.sources)
            let refused = try #require(sources.first { $0.url == cell.url() })
            #expect(refused.bytes == 0)
            // Set aside (it joins if wwan0 becomes allowed), not dropped.
            #expect(refused.dropped == nil)
            #expect(refused.standby?.contains("reached over wwan0") == true, "\(refused)")
            #expect(refused.standby?.contains("rule `home`") == true)
            #expect(sources.first { $0.url == preferred.url() }?.bytes == 8 << 20)
            #expect(sources.first { $0.url == h.server.url() }.map { $0.bytes == 0 && $0.dropped == nil } == true)
        }
    }

    /// One URL over the forbidden link waits (not fails) and goes on when the link changes; a redirect there
    /// and a percent-encoded spelling of that host are not followed.
    @Test(.needsNginx) func aURLOverAForbiddenLinkWaitsAndRedirectsAndSpellingsDoNotGetThere() async throws {
        let h = try await EngineHarness(policy: Self.policy)
        try await h.use { h in
            let content = RangeContent.generated(size: 8 << 20, seed: 7)
            let cell = try await RangeServer.start(host: "127.0.0.2", content: content)
            defer { Task { try? await cell.shutdown() } }
            let root = h.directory.appendingPathComponent("www").path
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            let redirector = try Nginx(root: root, location: "return 302 \(cell.url());")
            defer { redirector.stop() }
            h.monitor.send(Self.snapshot)

            // A mirror job: the redirect and the percent-encoded host are dropped; the job completes from the rest.
            var spec = JobSpec(url: h.server.url(), destination: h.directory.appendingPathComponent("m.bin").path)
            spec.mirrors = [redirector.url("/file"), "http://%31%32%37.0.0.2:\(cell.port)/file"]
            let mirrored = try await h.engine.add(spec)
            #expect(try await h.until(timeout: .seconds(30)) { try await h.state(mirrored.id) == .completed })
            #expect(cell.requestCount == 0, "a source over wwan0 was asked")
            let sources = try #require(try await h.engine.status(mirrored.id).job.sources)
            // The redirect is dropped (its answer leads there); the spelling of the host is set aside.
            #expect(sources.filter { ($0.dropped ?? $0.standby ?? "").contains("wwan0") }.count == 2, "\(sources)")

            // One URL over wwan0: it waits with the reason, and runs once wwan0 no longer holds that address.
            let single = try await h.engine.add(
                JobSpec(url: cell.url(), destination: h.directory.appendingPathComponent("s.bin").path))
            #expect(
                try await h.until(timeout: .seconds(10)) {
                    try await h.engine.status(single.id).retryReason?.contains("reached over wwan0") == true
                })
            #expect(cell.requestCount == 0)
            #expect(try await h.state(single.id) != .failed)
            h.monitor.send(TestSnapshots.radios(up: ["wlan0", "wwan0"], primary: "wlan0"))
            #expect(try await h.until(timeout: .seconds(30)) { try await h.state(single.id) == .completed })
            #expect(cell.requestCount > 0)
        }
    }
}
