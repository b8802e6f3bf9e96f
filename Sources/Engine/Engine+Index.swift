import Foundation
import MeterwiseClient
import Policy
import Transfer

/// Reading and changing jobs whose records are in the store, not in memory: the queued ones (in `index`)
/// and the finished ones.
extension Engine {
    /// The reason text of each class and size, decided once for a whole `list`; the policy context is built
    /// only if a queued job asks for one (a finished job has no reason to work out).
    struct ReasonCache {
        let makeContext: () -> DecisionContext
        var context: DecisionContext?
        var reasons: [SizedClass: String] = [:]

        mutating func reason(_ entry: JobEntry, classes: InternTable<JobClass>) -> String {
            let key = SizedClass(jobClass: entry.jobClass, size: entry.size)
            if let known = reasons[key] { return known }
            let context = self.context ?? makeContext()
            self.context = context
            let reason = context.decide(job: classes[entry.jobClass].info(size: entry.policySize)).reasons
                .joined(separator: "; ")
            reasons[key] = reason
            return reason
        }
    }

    /// A `ReasonCache` for the policy, links and budgets as they are now.
    func reasonCache() -> ReasonCache {
        let (policy, snapshot, usage, now, timeZone) = (policy, snapshot, accounting.usage, now, configuration.timeZone)
        return ReasonCache(makeContext: {
            policy.context(snapshot: snapshot, usage: usage, now: now, timeZone: timeZone)
        })
    }

    /// The job as status shows it: its live runtime, or its stored record with what the index knows now.
    func view(_ id: String) -> JobRuntime<C.Instant>? {
        if let live = jobs[id] { return live }
        let stored: JobRecord?
        do {
            stored = try store.job(id)
        } catch {
            logger.error("\(error)", metadata: ["job": "\(id)"])
            return nil
        }
        guard let record = stored else { return nil }
        var reasons = reasonCache()
        let paused = (try? store.pausedSeconds([id]))?[id] ?? 0
        return view(of: record, pausedSeconds: paused, reasons: &reasons)
    }

    func view(of record: JobRecord, pausedSeconds: Double, reasons: inout ReasonCache) -> JobRuntime<C.Instant> {
        if let live = jobs[record.id] { return live }
        var runtime = JobRuntime<C.Instant>(record: record)
        runtime.pausedTotal = .seconds(pausedSeconds)
        guard let entry = index.entry(record.id) else { return runtime }
        // The store's state, rule and reason of a queued job are from when it was last saved; the pass's
        // are newer.
        runtime.record.state = entry.state
        if let key = index.decision(of: entry) {
            runtime.record.rule = key.rule
            runtime.record.reason =
                entry.lifecycle.waitingForSlot
                ? Self.slotReason(configuration.maxActive) : reasons.reason(entry, classes: index.classes)
            runtime.decision = Decision(
                action: key.action, rate: key.rate, allowedLinks: key.allowedLinks, rule: key.rule)
            runtime.decision?.heldBy = key.heldBy
        }
        return runtime
    }

    /// How many jobs are in each state (for /metrics): finished ones as the store counts them, the others as
    /// they stand now.
    public func stateCounts() -> [JobState: Int] {
        var counts = index.stateCounts().filter { !$0.key.isFinal }
        do {
            for (state, count) in try store.countsByState() where state.isFinal { counts[state, default: 0] += count }
        } catch {
            logger.error("\(error)")
        }
        return counts
    }

    /// The time each unfinished job that has paused has spent paused by the policy (a job that never
    /// started has none, and no series).
    /// Each transferring job's mode and, in background mode, its figures (`/metrics`).
    public func transferModes() -> [(job: String, mode: TransferMode, background: BackgroundState?)] {
        jobs.values.filter { isTransferring($0.record.id) }.map { ($0.record.id, $0.mode, $0.background) }
            .sorted { $0.job < $1.job }
    }

    public func pausedSeconds() -> [(job: String, seconds: Double)] {
        var result = jobs.values.filter { !$0.record.state.isFinal }.map { runtime in
            var paused = runtime.pausedTotal
            if let since = runtime.pausedSince { paused += since.duration(to: clock.now) }
            return (job: runtime.record.id, seconds: paused.seconds)
        }
        // Queued jobs that paused before (a restart since): their time as saved.
        do {
            for (id, seconds) in try store.pausedSeconds() where jobs[id] == nil && index.entry(id) != nil {
                result.append((id, seconds))
            }
        } catch {
            logger.error("\(error)")
        }
        return result.sorted { $0.job < $1.job }
    }
}
