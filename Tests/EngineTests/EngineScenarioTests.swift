import Engine
import Foundation
import Links
import MeterwiseClient
import Policy
import TestSupport
import Testing

/// The engine on a manual link monitor and a manual clock, downloading from the loopback range server.
@Suite(.serialized) struct EngineScenarioTests {
    func withHarness(
        policy: String = Policies.standard, size: Int64 = 8 << 20, bytesPerSecond: Int? = 4 << 20,
        now: Date = Date(), _ body: (EngineHarness) async throws -> Void
    ) async throws {
        let harness = try await EngineHarness(policy: policy, size: size, bytesPerSecond: bytesPerSecond, now: now)
        try await harness.use(body)
    }

    @Test func pausesWithinOneEventAndStopsReading() async throws {
        try await withHarness(bytesPerSecond: 2 << 20) { h in
            h.monitor.send(up: ["wlan0", "wwan0"], primary: "wlan0")
            let job = try await h.add()
            #expect(await h.until { h.engine.accounting.bytesByLink["wlan0", default: 0] > 512 << 10 })
            h.monitor.send(up: ["wwan0"], primary: "wwan0")
            #expect(try await h.until { try await h.state(job.id) == .waiting })
            // The recorder receives events on its own task: wait for it to have seen the pause.
            #expect(await h.until { h.events.contains(where: \.isPaused) })
            // The events after the switch: the decision, then the pause, nothing in between.
            let events = h.events
            let switchIndex = try #require(
                events.lastIndex { if case let .links(s) = $0 { s.primary?.name == "wwan0" } else { false } })
            let next = events[(switchIndex + 1)...].filter { if case .progress = $0 { false } else { true } }
            #expect(next.first?.isDecision == true)
            #expect(next.dropFirst().first?.isPaused == true)
            // No more bytes are read once paused: every connection is closed.
            #expect(await h.until { h.server.openConnections == 0 })
            let leaked = h.engine.accounting.bytesByLink["wwan0", default: 0]
            #expect(leaked <= 256 << 10, "bytes counted on the metered link after the switch: \(leaked)")
        }
    }

    @Test func resumesOnlyAfterHysteresisThenCompletes() async throws {
        try await withHarness(size: 4 << 20, bytesPerSecond: 2 << 20) { h in
            h.monitor.send(up: ["wlan0", "wwan0"], primary: "wlan0")
            let job = try await h.add()
            #expect(await h.until { h.engine.accounting.bytesByLink["wlan0", default: 0] > 256 << 10 })
            h.monitor.send(up: ["wwan0"], primary: "wwan0")
            #expect(try await h.until { try await h.state(job.id) == .waiting })
            let back = h.clock.now
            h.monitor.send(up: ["wlan0", "wwan0"], primary: "wlan0")
            #expect(await h.until { h.events.contains { if case .waiting = $0 { true } else { false } } })
            // The engine waits on the clock for exactly resume_after after the Wi-Fi came back...
            let resumeAfter = await h.engine.policy.defaults.resumeAfter
            #expect(resumeAfter == .seconds(5), "the steps below assume the shipped policy's 5 s")
            let resumeAt = back.advanced(by: resumeAfter)
            #expect(
                await h.until { h.clock.deadlines.contains(resumeAt) }, "no wake at resume_after: \(h.clock.deadlines)")
            #expect(h.clock.deadlines.allSatisfy { $0 >= resumeAt }, "a wake before resume_after: \(h.clock.deadlines)")
            // ...so 4 s later nothing has woken it, and it has not started again.
            h.clock.advance(by: .seconds(4))
            #expect(h.count(\.isStarted) == 1, "resumed before resume_after")
            h.clock.advance(by: .seconds(1))
            #expect(await h.until { h.count(\.isStarted) == 2 })
            #expect(try await h.until { try await h.state(job.id) == .completed })
            let status = try await h.engine.status(job.id)
            #expect(status.job.sha256 == h.server.content.sha256Hex())
            #expect(status.pausedSeconds >= 5)
            #expect(h.engine.accounting.bytesByLink["wwan0", default: 0] <= 256 << 10)
        }
    }

    /// NetworkManager says portal on the Wi-Fi: the running job stops with the portal's URL as its reason; it
    /// says full again: the job resumes at once (a sign-in is not a flapping link: no hysteresis) and completes.
    @Test func aPortalPausesWithItsURLAndSigningInResumesAtOnce() async throws {
        try await withHarness(size: 4 << 20, bytesPerSecond: 2 << 20) { h in
            func wifi(_ state: Connectivity, portal: String? = nil) -> LinkSnapshot {
                var snapshot = TestSnapshots.radios(up: ["wlan0"], primary: "wlan0")
                let index = snapshot.links.firstIndex { $0.name == "wlan0" }!
                snapshot.links[index].connectivity = state
                snapshot.links[index].connectivitySource = "networkmanager"
                snapshot.links[index].portalURL = portal
                return snapshot
            }
            h.monitor.send(wifi(.full))
            let job = try await h.add()
            #expect(await h.until { h.engine.accounting.bytesByLink["wlan0", default: 0] > 256 << 10 })
            // The Wi-Fi has been up for a while (the engine's clock is manual).
            h.clock.advance(by: .seconds(10))
            h.monitor.send(wifi(.portal, portal: "http://10.20.0.1/login"))
            #expect(try await h.until { try await h.state(job.id) == .waiting })
            #expect(await h.until { h.server.openConnections == 0 })
            let reason = try await h.engine.status(job.id).job.reason ?? ""
            #expect(
                reason.contains(
                    "captive portal on wlan0: sign in at http://10.20.0.1/login (networkmanager); downloads resume when networkmanager says full"
                ), "\(reason)")
            h.monitor.send(wifi(.full))
            // No clock advance: the resume is not held by resume_after.
            #expect(await h.until { h.count(\.isStarted) == 2 }, "not resumed without the hysteresis")
            #expect(try await h.until { try await h.state(job.id) == .completed })
            #expect(try await h.engine.status(job.id).job.sha256 == h.server.content.sha256Hex())
        }
    }

    static let budgetPolicy = """
        version: 1
        defaults: { resume_after: 5s, action: pause }
        rules:
          - { name: run-unmetered, when: { metered: no }, action: run }
          - name: cellular-allowance
            when: { metered: yes }
            action: run
            budget: { bytes: 1MiB, period: daily }
          - { name: pause-metered, when: { metered: yes }, action: pause }
        """

    @Test func budgetExhaustedPauses() async throws {
        try await withHarness(policy: Self.budgetPolicy, size: 4 << 20, bytesPerSecond: 2 << 20) { h in
            h.monitor.send(up: ["wwan0"], primary: "wwan0")
            let job = try await h.add()
            #expect(await h.until { h.count(\.isStarted) == 1 })
            #expect(try await h.until { try await h.state(job.id) == .waiting })
            let status = try await h.engine.status(job.id)
            #expect(status.job.rule == "pause-metered")
            let used = h.engine.accounting.bytesByLink["wwan0", default: 0]
            #expect(used >= 1 << 20 && used <= (1 << 20) + (512 << 10), "bytes over cellular: \(used)")
            #expect(h.engine.accounting.usage.bytes.values.reduce(0, +) >= 1 << 20)
        }
    }

    static let nightPolicy = """
        version: 1
        defaults: { resume_after: 5s, action: pause }
        rules:
          - { name: night, when: { metered: yes, time: "01:00-05:00" }, action: run }
          - { name: wait-for-night, when: { metered: yes }, action: pause }
        """

    @Test func timeWindowOpensAndJobRuns() async throws {
        let start = ISO8601DateFormatter().date(from: "2026-11-20T00:59:58Z")!
        try await withHarness(policy: Self.nightPolicy, size: 1 << 20, bytesPerSecond: nil, now: start) { h in
            h.monitor.send(up: ["wwan0"], primary: "wwan0")
            let job = try await h.add()
            #expect(try await h.until { try await h.state(job.id) == .waiting })
            #expect(h.count(\.isStarted) == 0)
            // The engine's next wake is the window's opening, 01:00:00 (2 s in), and nothing earlier.
            let opens = h.clock.now.advanced(by: .seconds(2))
            #expect(await h.until { h.clock.deadlines.first == opens }, "next wake: \(h.clock.deadlines)")
            h.clock.advance(by: .seconds(1))
            #expect(h.count(\.isStarted) == 0, "ran before 01:00")
            #expect(h.clock.deadlines.first == opens)
            h.clock.advance(by: .seconds(1))
            #expect(try await h.until { try await h.state(job.id) == .completed })
            #expect(try await h.engine.status(job.id).job.rule == "night")
        }
    }

    @Test func flappingNeverRunsTwoTransfersForOneJob() async throws {
        let scenario = try ScenarioParser.load(path: RepoPaths.file("docs/scenarios/flapping.yaml"))
        try await withHarness(size: 6 << 20, bytesPerSecond: 2 << 20) { h in
            let timeline = scenario.timeline()
            h.monitor.send(timeline[0].snapshot)
            let job = try await h.add()
            #expect(await h.until { h.count(\.isStarted) == 1 })
            var previous = Duration.zero
            for (step, entry) in timeline.enumerated().dropFirst() {
                h.clock.advance(by: entry.at - previous)
                previous = entry.at
                h.monitor.send(entry.snapshot)
                // The monitor numbers snapshots from 1. The engine publishes a snapshot's links event before
                // what it decides on it, so once this one is recorded every event of the steps before it is too.
                let sequence = UInt64(step + 1)
                #expect(
                    await h.until { h.events.contains { ($0.linksSequence ?? 0) >= sequence } },
                    "step \(step) was not applied")
            }
            // The engine answers after it has decided on the last snapshot: Wi-Fi back, still in hysteresis.
            #expect(try await h.state(job.id) == .waiting, "restarted at the end of the flapping")
            #expect(h.count(\.isStarted) == 1, "restarted while the Wi-Fi was flapping")
            h.clock.advance(by: .seconds(5))
            #expect(try await h.until { try await h.state(job.id) == .completed })
            // Every start is published before the job's completion.
            #expect(await h.until { h.events.contains(where: \.isCompleted) })
            #expect(h.count(\.isStarted) == 2)
            // The server counts connections as they open and close: the most at once over the whole run.
            #expect(h.server.peakOpenConnections == 1, "two connections for one single-segment job")
            #expect(try await h.engine.status(job.id).job.sha256 == h.server.content.sha256Hex())
            #expect(h.engine.accounting.bytesByLink["wwan0", default: 0] <= 256 << 10)
        }
    }

    @Test func userPauseHoldsUntilResume() async throws {
        try await withHarness(size: 2 << 20, bytesPerSecond: 1 << 20) { h in
            h.monitor.send(up: ["wlan0"], primary: "wlan0")
            let job = try await h.add()
            #expect(await h.until { h.count(\.isStarted) == 1 })
            try await h.engine.pause(job.id)
            #expect(try await h.until { try await h.state(job.id) == .paused })
            h.monitor.send(up: ["wlan0", "eth0"], primary: "eth0")
            // Once the engine has published the new links it has decided every job again (one actor turn).
            #expect(
                await h.until {
                    h.events.contains { if case let .links(s) = $0 { s.primary?.name == "eth0" } else { false } }
                })
            #expect(try await h.state(job.id) == .paused)
            #expect(h.count(\.isStarted) == 1)
            try await h.engine.resume(job.id)
            #expect(try await h.until { try await h.state(job.id) == .completed })
        }
    }

    @Test func cancelRemovesPartialFiles() async throws {
        try await withHarness(size: 4 << 20, bytesPerSecond: 1 << 20) { h in
            h.monitor.send(up: ["wlan0"], primary: "wlan0")
            let job = try await h.add()
            #expect(await h.until { h.engine.accounting.bytesByLink["wlan0", default: 0] > 300 << 10 })
            try await h.engine.cancel(job.id)
            // The cancel returns once the transfer has ended, and its stop is counted.
            #expect(try await h.state(job.id) == .cancelled)
            #expect(await h.engine.stopLatency.count == 1)
            #expect(await h.until { !FileManager.default.fileExists(atPath: job.destination + ".part") })
            #expect(!FileManager.default.fileExists(atPath: job.checkpointPath))
        }
    }

    /// `/d/x`, `/d/./x`, `/d//e/../x` and `/link-to-d/x` name one file: the engine resolves the directory once
    /// (as the kernel does) and a second job to any spelling is a conflict.
    @Test func spellingsOfOneDestinationAreOneDestination() async throws {
        try await withHarness(size: 1 << 20, bytesPerSecond: 256 << 10) { h in
            let d = h.directory.appendingPathComponent("d").path
            try FileManager.default.createDirectory(atPath: d + "/e", withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(
                atPath: h.directory.appendingPathComponent("link").path, withDestinationPath: d)
            let first = try await h.engine.add(JobSpec(url: h.server.url("/x"), destination: d + "/x"))
            for spelling in [
                d + "/./x", d + "//x", d + "/e/../x", h.directory.appendingPathComponent("link").path + "/x",
            ] {
                await #expect(throws: EngineError.self, "\(spelling)") {
                    try await h.engine.add(JobSpec(url: h.server.url("/x"), destination: spelling))
                }
            }
            #expect(first.destination.hasSuffix("/d/x"))
            // A destination that names a directory, or whose directory is missing, is refused with the fix.
            await #expect(throws: EngineError.self) {
                try await h.engine.add(JobSpec(url: h.server.url("/x"), destination: d + "/e/.."))
            }
            await #expect(throws: EngineError.self) {
                try await h.engine.add(JobSpec(url: h.server.url("/x"), destination: d + "/missing/x"))
            }
            // The daemon requests the HEAD URL too: only http(s), like the URL. No control characters in paths
            // that other users' terminals print.
            await #expect(throws: EngineError.self) {
                try await h.engine.add(
                    JobSpec(url: h.server.url("/x"), destination: d + "/h", headURL: "http+unix://%2Frun%2Fx.sock/"))
            }
            await #expect(throws: EngineError.self) {
                try await h.engine.add(
                    JobSpec(url: h.server.url("/x"), destination: d + "/esc\u{1B}]0;title\u{07}.bin"))
            }
        }
    }

    /// A cancel that arrives while the user's pause is still stopping the transfer is a cancel all the same:
    /// the `cancelled` event comes, and the partial file and checkpoint go.
    @Test func cancelWhilePauseIsFinishingStillCancels() async throws {
        try await withHarness(size: 4 << 20, bytesPerSecond: 1 << 20) { h in
            h.monitor.send(up: ["wlan0"], primary: "wlan0")
            let job = try await h.add()
            #expect(await h.until { h.engine.accounting.bytesByLink["wlan0", default: 0] > 300 << 10 })
            try await h.engine.pause(job.id)
            try await h.engine.cancel(job.id)
            #expect(
                await h.until { h.events.contains { if case .cancelled = $0 { true } else { false } } },
                "no cancelled event")
            #expect(try await h.state(job.id) == .cancelled)
            #expect(await h.until { !FileManager.default.fileExists(atPath: job.destination + ".part") })
            #expect(await h.until { !FileManager.default.fileExists(atPath: job.checkpointPath) })
            #expect(h.count(\.isPaused) <= 1, "a second paused event for one stop")
        }
    }
}

extension EngineEvent {
    /// The sequence number of a `links` event's snapshot.
    fileprivate var linksSequence: UInt64? { if case let .links(snapshot) = self { snapshot.sequence } else { nil } }
}
