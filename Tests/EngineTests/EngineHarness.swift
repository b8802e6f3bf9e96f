import AsyncHTTPClient
import Engine
import Foundation
import Links
import MeterwiseClient
import Policy
import RangeServer
import Synchronization
import TestSupport
import Transfer

/// An engine on a manual link monitor, a manual clock and a loopback range server, with its events
/// recorded. Everything it creates lives in a temporary folder that `close()` removes.
final class EngineHarness: Sendable {
    let server: RangeServer
    let clock = ManualClock()
    let monitor = ManualLinkMonitor()
    let engine: Engine<ManualClock>
    let directory: URL
    let recorded = EventLog()
    let runner: Task<Void, any Error>
    let listener: Task<Void, Never>

    init(
        policy: String, size: Int64 = 8 << 20, bytesPerSecond: Int? = 4 << 20, now: Date = Date(),
        timeZone: TimeZone = TimeZone(identifier: "UTC")!, faults: [RangeFault] = [], httpClient: HTTPClient? = nil,
        hints: [any LinkHintSource] = [], tune: @escaping @Sendable (inout DownloadRequest) -> Void = { _ in }
    ) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mw-engine-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        server = try await RangeServer.start(
            content: .generated(size: size, seed: 7),
            faults: (bytesPerSecond.map { [.throttle(bytesPerSecond: $0)] } ?? []) + faults)
        let store = try JobStore(path: directory.appendingPathComponent("jobs.sqlite").path)
        engine = try Engine(
            policy: try PolicySet.parse(files: [(name: "test.yaml", text: policy)]), store: store,
            monitor: hints.isEmpty ? monitor : HintedLinkMonitor(base: monitor, sources: hints),
            clock: clock, now: now,
            configuration: EngineConfiguration(
                canBind: false, timeZone: timeZone, httpClient: httpClient,
                tuneRequest: { request in
                    request.segments = 1
                    request.checkpointEveryBytes = 256 << 10
                    request.checkpointEvery = .milliseconds(200)
                    tune(&request)
                }))
        let events = engine.events.subscribe(buffer: 100_000)
        let recorded = self.recorded
        listener = Task { for await event in events { recorded.append(event) } }
        let engine = self.engine
        runner = Task { try await engine.run() }
    }

    var events: [EngineEvent] { recorded.all }

    func add(_ name: String = "file.bin", allowMetered: Bool = false, size: Int64? = nil, url: String? = nil)
        async throws -> JobRecord
    {
        try await engine.add(
            JobSpec(
                url: url ?? server.url("/\(name)"), destination: directory.appendingPathComponent(name).path,
                sha256: server.content.sha256Hex(), size: size, allowMetered: allowMetered))
    }

    func state(_ id: String) async throws -> JobState { try await engine.status(id).job.state }

    /// Waits (real time: transfers are real) until `condition` holds.
    func until(timeout: Duration = .seconds(20), _ condition: @Sendable () async throws -> Bool) async rethrows -> Bool
    {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return try await condition()
    }

    func count(_ match: (EngineEvent) -> Bool) -> Int { events.filter(match).count }

    /// Runs `body`, then closes the harness whether or not `body` threw.
    func use(_ body: (EngineHarness) async throws -> Void) async throws {
        do {
            try await body(self)
        } catch {
            await close()
            throw error
        }
        await close()
    }

    func close() async {
        await engine.shutdown()
        _ = try? await runner.value
        listener.cancel()
        try? await server.shutdown()
        try? FileManager.default.removeItem(at: directory)
    }
}

extension EngineEvent {
    var isStarted: Bool { if case .started = self { true } else { false } }
    var isPaused: Bool { if case .paused = self { true } else { false } }
    var isCompleted: Bool { if case .completed = self { true } else { false } }
    var isLinks: Bool { if case .links = self { true } else { false } }
    var isDecision: Bool { if case .decision = self { true } else { false } }
}

enum Policies {
    /// The shipped default policy (policies/default.yaml, as built into the binary): no third copy.
    static let standard = ShippedPolicy.defaultYAML
}

final class EventLog: Sendable {
    private let events = Mutex<[EngineEvent]>([])
    func append(_ event: EngineEvent) { events.withLock { $0.append(event) } }
    var all: [EngineEvent] { events.withLock { $0 } }
}
