import Engine
import Foundation
import Links
import MeterwiseClient
import Policy
import TestSupport
import Testing

/// Retention of finished jobs, and the order a pass decides jobs in, kept without sorting.
@Suite(.serialized)
struct EngineScaleTests {
    static let policy = """
        version: 1
        defaults:
          action: run
        """

    func withStore(_ body: (JobStore, String) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mw-scale-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await body(try JobStore(path: directory.appendingPathComponent("jobs.sqlite").path), directory.path)
    }

    func engine(_ store: JobStore, retention: Duration?, maxActive: Int = 3) throws -> Engine<ManualClock> {
        var configuration = EngineConfiguration(maxActive: maxActive, canBind: false)
        configuration.retention = retention
        return try Engine(
            policy: try PolicySet.parse(files: [(name: "p.yaml", text: Self.policy)]), store: store,
            monitor: ManualLinkMonitor(), clock: ManualClock(), configuration: configuration)
    }

    func record(_ id: String, _ state: JobState, daysAgo: Double, in directory: String) -> JobRecord {
        var job = JobRecord(
            id: id, url: "http://127.0.0.1:9/\(id)", destination: "\(directory)/\(id).bin",
            now: Date().addingTimeInterval(-daysAgo * 86_400))
        job.state = state
        return job
    }

    @Test func finishedJobsOlderThanTheRetentionArePrunedAtStart() async throws {
        try await withStore { store, directory in
            try store.insert(record("old-done", .completed, daysAgo: 8, in: directory))
            try store.insert(record("old-failed", .failed, daysAgo: 30, in: directory))
            try store.insert(record("new-done", .completed, daysAgo: 1, in: directory))
            try store.insert(record("old-queued", .queued, daysAgo: 30, in: directory))
            try store.insert(record("old-paused", .paused, daysAgo: 30, in: directory))
            let engine = try engine(store, retention: .seconds(7 * 86_400))
            let ids = Set(await engine.list().map(\.job.id))
            #expect(ids == ["new-done", "old-queued", "old-paused"])
            #expect(try store.job("old-done") == nil)
            #expect(try store.count() == 3)
            await #expect(throws: EngineError.self) { try await engine.status("old-failed") }
        }
    }

    @Test func noRetentionKeepsEveryJob() async throws {
        try await withStore { store, directory in
            try store.insert(record("ancient", .completed, daysAgo: 3000, in: directory))
            let engine = try engine(store, retention: nil)
            #expect(await engine.list().map(\.job.id) == ["ancient"])
        }
    }

    /// With one transfer slot, a job added later with a higher priority is the one that starts; among
    /// equal priorities the oldest does. `list` keeps the order jobs were added.
    @Test func aPassStartsJobsByPriorityThenAge() async throws {
        try await withStore { store, directory in
            let engine = try engine(store, retention: nil, maxActive: 1)
            for (name, priority) in [("a", 0), ("b", 0), ("c", 5), ("d", 5), ("e", -1)] {
                _ = try await engine.add(
                    JobSpec(
                        url: "http://127.0.0.1:9/\(name)", destination: "\(directory)/\(name).bin",
                        priority: priority))
            }
            #expect(
                await engine.list().map { URL(string: $0.job.url)!.lastPathComponent } == ["a", "b", "c", "d", "e"])
            var order: [String] = []
            for id in await engine.decisionOrder() {
                order.append(URL(string: try await engine.status(id).job.url)!.lastPathComponent)
            }
            #expect(order == ["c", "d", "a", "b", "e"])
        }
    }

    /// A failed job resumed goes back to its place among the jobs of its priority (the order they were
    /// added), the same place a restart gives it.
    @Test func aResumedFailedJobKeepsItsPlace() async throws {
        try await withStore { store, directory in
            try store.insert(record("first", .failed, daysAgo: 0, in: directory))
            try store.insert(record("second", .queued, daysAgo: 0, in: directory))
            try store.insert(record("third", .queued, daysAgo: 0, in: directory))
            let engine = try engine(store, retention: nil)
            #expect(await engine.decisionOrder() == ["second", "third"])
            try await engine.resume("first")
            #expect(await engine.decisionOrder() == ["first", "second", "third"])
            #expect(try await engine.status("first").job.state == .queued)
            let restarted = try self.engine(store, retention: nil)
            #expect(await restarted.decisionOrder() == ["first", "second", "third"])
        }
    }

    /// A failed job gave its destination up; resuming it after another job took it is a conflict.
    @Test func resumingAFailedJobWhoseDestinationWasTakenIsRefused() async throws {
        try await withStore { store, directory in
            try store.insert(record("old", .failed, daysAgo: 0, in: directory))
            let engine = try engine(store, retention: nil)
            _ = try await engine.add(JobSpec(url: "http://127.0.0.1:9/new", destination: "\(directory)/old.bin"))
            await #expect(throws: EngineError.self) { try await engine.resume("old") }
            #expect(try await engine.status("old").job.state == .failed)
        }
    }

    /// Paused time is saved with the job: a queued job shows what it had before a restart, in `status`,
    /// `list` and the metrics.
    @Test func pausedTimeIsKeptInTheStore() async throws {
        try await withStore { store, directory in
            var job = record("waited", .waiting, daysAgo: 0, in: directory)
            try store.insert(job)
            job.updatedAt = Date()
            try store.update(job, pausedSeconds: 100)
            let engine = try engine(store, retention: nil)
            #expect(try await engine.status("waited").pausedSeconds == 100)
            #expect(await engine.list().first?.pausedSeconds == 100)
            #expect(await engine.pausedSeconds().map(\.job) == ["waited"])
            try await engine.cancel("waited")
            #expect(try await engine.status("waited").pausedSeconds == 100)
            #expect(await engine.pausedSeconds().isEmpty)
        }
    }
}
