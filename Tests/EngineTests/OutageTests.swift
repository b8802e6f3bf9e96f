import AsyncHTTPClient
import Engine
import Foundation
import Links
import MeterwiseClient
import Policy
import RangeServer
import TestSupport
import Testing

@testable import Transfer

/// An outage is a wait, not a failure; a declared size is a hint; a job the daemon keeps dying under
/// fails instead of looping.
@Suite(.serialized) struct OutageTests {
    /// A client that gives up connecting after 1 s (AsyncHTTPClient retries a refused connect until then).
    static let quickClient: HTTPClient = {
        var configuration = TransferClient.configuration()
        configuration.timeout.connect = .seconds(1)
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    func withHarness(
        policy: String = Policies.standard, size: Int64 = 2 << 20, bytesPerSecond: Int? = 4 << 20,
        faults: [RangeFault] = [], tune: @escaping @Sendable (inout DownloadRequest) -> Void = { _ in },
        _ body: (EngineHarness) async throws -> Void
    ) async throws {
        let harness = try await EngineHarness(
            policy: policy, size: size, bytesPerSecond: bytesPerSecond, faults: faults,
            httpClient: Self.quickClient, tune: tune)
        try await harness.use(body)
    }

    func retries(_ h: EngineHarness) -> Int {
        h.count { if case let .notice(_, text) = $0 { text.hasPrefix("retry ") } else { false } }
    }

    /// Twenty 503s in a row: far beyond `get`'s 8 retries, and the daemon's job still completes.
    @Test func fiveHundredsAreWaitedOut() async throws {
        try await withHarness(
            faults: [.unavailable(retryAfter: 0, times: 20)], tune: { $0.retryCap = .milliseconds(300) }
        ) { h in
            h.monitor.send(up: ["wlan0"], primary: "wlan0")
            let job = try await h.add()
            #expect(try await h.until(timeout: .seconds(40)) { try await h.state(job.id) == .completed })
            #expect(retries(h) >= 20)
            #expect(try await h.engine.status(job.id).job.sha256 == h.server.content.sha256Hex())
        }
    }

    /// Connection refused while the server is down, with the next retry shown; it completes once it is back.
    @Test func refusedConnectionsAreWaitedOutAndTheNextRetryIsShown() async throws {
        try await withHarness(tune: { $0.retryCap = .milliseconds(400) }) { h in
            let port = h.server.port
            try await h.server.shutdown()
            h.monitor.send(up: ["wlan0"], primary: "wlan0")
            let job = try await h.add()
            #expect(await h.until(timeout: .seconds(40)) { retries(h) >= 10 }, "retries: \(retries(h))")
            let status = try await h.engine.status(job.id)
            #expect(status.job.state == .running)
            #expect(
                status.nextRetryAt != nil && status.retryReason?.contains("refused") == true,
                "\(String(describing: status.retryReason))")
            let back = try await RangeServer.start(port: port, content: h.server.content)
            defer { Task { try? await back.shutdown() } }
            #expect(try await h.until(timeout: .seconds(20)) { try await h.state(job.id) == .completed })
            #expect(try await h.engine.status(job.id).nextRetryAt == nil)
        }
    }

    /// A long back-off ends at once when a link changes: the outage may be over.
    @Test func aLinkChangeRetriesAtOnce() async throws {
        try await withHarness(tune: { $0.retryCap = .seconds(3600) }) { h in
            let port = h.server.port
            try await h.server.shutdown()
            h.monitor.send(up: ["wlan0"], primary: "wlan0")
            let job = try await h.add()
            // Wait for a back-off of several seconds.
            #expect(
                try await h.until(timeout: .seconds(30)) {
                    guard let next = try await h.engine.status(job.id).nextRetryAt else { return false }
                    return next.timeIntervalSinceNow > 4
                }, "\(h.events.compactMap { if case let .notice(_, text) = $0 { text } else { nil } }.suffix(6))")
            let back = try await RangeServer.start(port: port, content: h.server.content)
            defer { Task { try? await back.shutdown() } }
            let changed = ContinuousClock.now
            h.monitor.send(up: ["wlan0", "eth0"], primary: "wlan0")
            #expect(
                try await h.until(timeout: .seconds(3)) { try await h.state(job.id) == .completed },
                "not completed within 3 s of the link change")
            #expect(ContinuousClock.now - changed < .seconds(3))
        }
    }

    /// A captive portal appears midway (302 → /login → a page): the job waits with the portal's URL, writes
    /// nothing of the page, and completes with the right sha256 once the portal is gone, nothing fetched twice.
    @Test func aCaptivePortalIsWaitedOutWithoutLosingProgress() async throws {
        try await withHarness(size: 8 << 20, bytesPerSecond: 2 << 20, tune: { $0.retryCap = .milliseconds(300) }) { h in
            h.monitor.send(up: ["wlan0"], primary: "wlan0")
            let job = try await h.add()
            #expect(try await h.until { try await h.engine.status(job.id).job.bytesDone >= 2 << 20 })
            // Cellular pauses it; the Wi-Fi it comes back to has a portal now.
            h.monitor.send(up: ["wwan0"], primary: "wwan0")
            #expect(try await h.until { try await h.state(job.id) == .waiting })
            let kept = try await h.engine.status(job.id).job.bytesDone
            h.server.setFaults([.captivePortal(redirect: true)])
            h.monitor.send(up: ["wlan0"], primary: "wlan0")
            // The policy's hysteresis (resume_after: 5s) on the engine's manual clock.
            try await Task.sleep(for: .milliseconds(100))
            h.clock.advance(by: .seconds(6))
            let reason =
                "a captive portal or proxy answered instead of the server (redirected to \(h.server.url("/login")))"
            #expect(
                try await h.until(timeout: .seconds(20)) { try await h.engine.status(job.id).retryReason == reason },
                "\(h.events.compactMap { if case let .notice(_, text) = $0 { text } else { nil } }.suffix(6))")
            let waiting = try await h.engine.status(job.id)
            #expect(waiting.job.state == .running)
            #expect(waiting.nextRetryAt != nil)
            #expect(waiting.job.bytesDone == kept)
            h.server.setFaults([])
            #expect(try await h.until(timeout: .seconds(20)) { try await h.state(job.id) == .completed })
            let done = try await h.engine.status(job.id).job
            #expect(done.sha256 == h.server.content.sha256Hex())
            #expect(done.refetchedBytes == 0)
            #expect(
                !h.events.contains { if case let .notice(_, text) = $0 { text.contains("restarted") } else { false } })
        }
    }

    static let smallOnMetered = """
        version: 1
        defaults: { resume_after: 1s, action: pause }
        rules:
          - { name: run-unmetered, when: { metered: no }, action: run }
          - { name: small-on-metered, when: { metered: yes, size: "< 2MiB" }, action: run }
          - { name: pause-metered, when: { metered: yes }, action: pause }
        """

    /// `add --size 1MiB` of an 8 MiB file over cellular: the real size stops it before its body is read.
    @Test func aDeclaredSizeIsAHintUntilTheServerAnswers() async throws {
        try await withHarness(policy: Self.smallOnMetered, size: 8 << 20, bytesPerSecond: 2 << 20) { h in
            h.monitor.send(up: ["wwan0"], primary: "wwan0")
            let job = try await h.add(size: 1 << 20)
            #expect(await h.until { h.count(\.isStarted) == 1 })
            #expect(try await h.until { try await h.state(job.id) == .waiting })
            let status = try await h.engine.status(job.id)
            #expect(status.job.rule == "pause-metered", "\(String(describing: status.job.rule))")
            #expect(status.job.totalBytes == 8 << 20)
            #expect(await h.until { h.server.openConnections == 0 })
            let used = h.engine.accounting.bytesByLink["wwan0", default: 0]
            #expect(used <= 512 << 10, "bytes over cellular after the real size was known: \(used)")
        }
    }

    /// The daemon died twice while a job ran without saving progress: the job fails with the reason
    /// instead of taking the daemon down a third time. Once is forgiven.
    @Test func aJobTheDaemonDiedUnderTwiceFails() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "mw-interrupt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("jobs.sqlite").path
        do {
            let store = try JobStore(path: path)
            var once = JobRecord(id: "once0000", url: "http://127.0.0.1:9/a", destination: directory.path + "/a")
            once.state = .running
            var twice = JobRecord(id: "twice000", url: "http://127.0.0.1:9/b", destination: directory.path + "/b")
            twice.state = .running
            twice.interruptions = 1
            try store.insert(once)
            try store.insert(twice)
        }
        let store = try JobStore(path: path)
        let engine = try Engine(
            policy: try PolicySet.parse(files: [(name: "p.yaml", text: Policies.standard)]), store: store,
            monitor: ManualLinkMonitor(), clock: ManualClock())
        let once = try await engine.status("once0000").job
        let twice = try await engine.status("twice000").job
        #expect(once.state == .queued && once.interruptions == 1)
        #expect(twice.state == .failed && twice.interruptions == 2)
        #expect(twice.error?.contains("meterwise resume twice000") == true)
        #expect(try store.job("twice000")?.state == .failed)
    }
}
