import AsyncHTTPClient
import Foundation
import MeterwiseClient
import Links
import Logging
import Policy
import Transfer

/// Joins the link monitor, the policy and the downloader for every job.
///
/// On every snapshot change, and at the next instant a decision can change by time alone, every job is
/// decided again; there is no polling timer. Pausing is immediate; resuming after a policy pause waits
/// for the links to be stable for the policy's `resume_after`. `run()` is the one long-lived task: the
/// monitor, the timers and every transfer are child tasks of it.
public actor Engine<C: Clock> where C.Duration == Duration, C.Instant: Sendable {
    enum Command: Sendable {
        case drive(String, Download)
        case forward(String, Download)
        case reconcile(String)
        case stopTransfer(Download, cancel: Bool)
        case wake(C.Instant)
        case stop
    }

    public let store: JobStore
    public nonisolated let events = EventHub()
    public nonisolated let accounting: LinkAccounting
    public private(set) var policy: PolicySet
    public private(set) var snapshot: LinkSnapshot = .empty
    let monitor: any LinkMonitor
    let clock: C
    let origin: C.Instant
    let originDate: Date
    let configuration: EngineConfiguration
    let logger: Logger
    var lastChange: C.Instant
    var jobs: [String: JobRuntime<C.Instant>] = [:]
    /// Every job, in the order they were added (what `list` shows).
    var order: [String] = []
    /// Every job, by priority and then the order they were added: the order a pass decides them in, kept
    /// sorted as jobs come and go, so no pass sorts.
    /// Each with its priority, so `enqueue`'s binary search reads no job records.
    var schedule: [(id: String, priority: Int)] = []
    /// The destination of every job that is not finished, and whose it is: one destination, one job.
    var destinations: [String: String] = [:]
    /// When finished jobs were last pruned (`EngineConfiguration.retention`).
    var lastPrune: Date?
    /// How long the last full pass over the jobs took, and how many it decided (for /metrics).
    public private(set) var lastPass: (duration: Duration, jobs: Int) = (.zero, 0)
    var scheduledWake: C.Instant?
    /// Jobs whose `run()` is in flight (kept in step with `JobRuntime.running`).
    var runningCount = 0
    var stopped = false
    /// Why `run()` must throw once it has stopped: the link monitor failed for good.
    var failure: EngineError?
    /// No decision is made before the monitor's first snapshot: an empty snapshot would pause everything.
    var haveSnapshot = false
    let commands: AsyncStream<Command>
    let commandSink: AsyncStream<Command>.Continuation

    public init(policy: PolicySet, store: JobStore, monitor: any LinkMonitor, clock: C, now: Date = Date(),
                configuration: EngineConfiguration = EngineConfiguration(),
                logger: Logger = Logger(label: "meterwise.engine")) throws(EngineError) {
        self.policy = policy
        self.store = store
        self.monitor = monitor
        self.clock = clock
        self.origin = clock.now
        self.originDate = now
        self.lastChange = clock.now
        self.configuration = configuration
        self.logger = logger
        self.accounting = LinkAccounting(usage: try store.usage(), linkBytes: try store.linkBytes())
        (commands, commandSink) = AsyncStream.makeStream(of: Command.self)
        if let retention = configuration.retention {
            do {
                try store.pruneFinished(before: now.addingTimeInterval(-retention.seconds))
                lastPrune = now
            } catch {
                logger.warning("could not prune finished jobs: \(error)")
            }
        }
        for var record in try store.jobs() {
            // A transfer that was running when the process died resumes from its checkpoint at once —
            // unless the process died twice in a row while it ran without saving progress: then the job is
            // the likely cause, and it fails with the reason instead of taking the daemon down again.
            if record.state == .running {
                record.interruptions += 1
                if record.interruptions >= 2 {
                    record.state = .failed
                    record.error = "the daemon stopped \(record.interruptions) times in a row while this job ran, without saving progress in between; `meterwise resume \(record.id)` tries again"
                } else {
                    record.state = .queued
                }
                try store.update(record)
            }
            jobs[record.id] = JobRuntime(record: record)
            order.append(record.id)
            if !record.state.isFinal { destinations[record.destination] = record.id }
        }
        // Stable: equal priorities keep the order they were added in.
        let loaded = jobs
        schedule = order.enumerated().map { (offset: $0.offset, id: $0.element, priority: loaded[$0.element]?.record.priority ?? 0) }
            .sorted { a, b in a.priority != b.priority ? a.priority > b.priority : a.offset < b.offset }
            .map { (id: $0.id, priority: $0.priority) }
    }

    /// The wall-clock time on the engine's clock.
    public var now: Date { originDate.addingTimeInterval(origin.duration(to: clock.now).seconds) }

    // MARK: - The main task

    /// Runs until `shutdown()` (or, with `stopWhenIdle`, until every job is finished). Throws an
    /// `EngineError` with code `.linkMonitor` when the link monitor failed for good: every transfer is paused
    /// with its checkpoint flushed first, and the caller (a daemon) should exit non-zero to be restarted.
    public func run() async throws {
        let monitor = self.monitor
        let clock = self.clock
        await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    for try await snapshot in monitor.snapshots() { await self.apply(snapshot) }
                    await self.monitorEnded()
                } catch is CancellationError {
                    // run() is ending.
                } catch {
                    await self.monitorFailed(error)
                }
            }
            if configuration.stopWhenIdle { checkIdle() }
            for await command in commands {
                switch command {
                case let .drive(id, download):
                    group.addTask { await self.drive(id, download) }
                case let .forward(id, download):
                    group.addTask { await self.forwardEvents(id, download) }
                case let .reconcile(id):
                    reconcile(id)
                case let .stopTransfer(download, cancel):
                    group.addTask { if cancel { await download.cancel() } else { await download.pause() } }
                case let .wake(deadline):
                    group.addTask {
                        try? await clock.sleep(until: deadline, tolerance: nil)
                        await self.wake(deadline)
                    }
                case .stop:
                    group.cancelAll()
                    return
                }
            }
        }
        events.finish()
        if let failure { throw failure }
    }

    /// Pauses every running transfer (checkpoints flushed), saves everything and ends `run()`.
    public func shutdown() async {
        guard !stopped else { return }
        stopped = true
        var pausing: [Download] = []
        for (id, runtime) in jobs where runtime.running {
            if let download = runtime.download { pausing.append(download) }
            jobs[id]?.stopping = true
        }
        await withTaskGroup(of: Void.self) { group in
            for download in pausing { group.addTask { await download.pause() } }
        }
        for (id, runtime) in jobs where runtime.record.state == .running {
            jobs[id]?.record.state = .queued
            persist(id)
        }
        saveAccounting()
        commandSink.yield(.stop)
    }

    /// Without link information nothing may download, and an engine that stays up without it would wait
    /// forever: every transfer is paused (checkpoints flushed) and `run()` ends by throwing, so that a daemon
    /// exits non-zero and its service manager restarts it.
    func monitorFailed(_ error: any Error) async {
        logger.error("the link monitor failed for good: \(error); pausing every job and stopping the engine")
        failure = EngineError(
            .linkMonitor,
            "link monitoring failed for good, so no job can be decided; the engine stopped with every checkpoint "
                + "flushed (a service manager restarts the daemon: Restart=on-failure)",
            cause: error)
        await shutdown()
    }

    func monitorEnded() {
        logger.debug("link monitor ended; keeping the last snapshot")
    }

    // MARK: - Inputs

    func apply(_ snapshot: LinkSnapshot) {
        self.snapshot = snapshot
        haveSnapshot = true
        lastChange = clock.now
        accounting.apply(snapshot)
        events.publish(.links(snapshot))
        // A link change may end an outage: transfers waiting to retry try again now.
        for runtime in jobs.values where runtime.active && runtime.nextRetryAt != nil { runtime.download?.retryNow() }
        reconcileAll()
    }

    func wake(_ deadline: C.Instant) {
        if scheduledWake == deadline { scheduledWake = nil }
        reconcileAll()
    }

    /// Replaces the policy (SIGHUP, a changed file); every job is decided again at once.
    public func reload(policy: PolicySet) {
        self.policy = policy
        events.publish(.policyReloaded(files: policy.files))
        reconcileAll()
    }

    // MARK: - Deciding

    func reconcileAll() {
        guard !stopped, haveSnapshot else { return }
        let started = ContinuousClock.now
        let context = policy.context(snapshot: snapshot, usage: accounting.usage, now: now, timeZone: configuration.timeZone)
        var earliest: C.Instant?
        var activeCount = runningCount
        // A decision depends on the job's size, priority, tags and permissions, not on which job it is:
        // jobs alike are decided once per pass.
        var decided: [JobInfo: (decision: Decision, reason: String)] = [:]
        var count = 0
        for (id, _) in schedule {
            guard let runtime = jobs[id], !runtime.record.state.isFinal, runtime.record.state != .paused,
                !runtime.stopping
            else { continue }
            var info = runtime.record.jobInfo
            info.id = ""
            let decision: Decision
            let reason: String
            if let known = decided[info] {
                (decision, reason) = known
            } else {
                decision = context.decide(job: info)
                // One text shared by every job alike, not a copy each.
                reason = decision.reasons.joined(separator: "; ")
                decided[info] = (decision, reason)
            }
            count += 1
            if Self.unchanged(runtime, decision: decision, slotsFull: activeCount >= configuration.maxActive) {
                // Nothing to do for this job: most of a long queue on a link change.
                if let next = decision.nextChange {
                    let wake = origin.advanced(by: .seconds(next.timeIntervalSince(originDate)))
                    earliest = min(earliest ?? wake, wake)
                }
                continue
            }
            if let wake = reconcile(id, decision: decision, reason: reason, activeCount: &activeCount) {
                earliest = min(earliest ?? wake, wake)
            }
        }
        schedule(earliest)
        lastPass = (ContinuousClock.now - started, count)
    }

    /// A job with no transfer whose decision is the one it already had, and that can only stay as it is:
    /// waiting on a pause, or queued for a run while every transfer slot is taken.
    static func unchanged(_ runtime: JobRuntime<C.Instant>, decision: Decision, slotsFull: Bool) -> Bool {
        guard !runtime.running, !runtime.stopping, let previous = runtime.decision, previous.action == decision.action,
            previous.rule == decision.rule, previous.allowedLinks == decision.allowedLinks, previous.rate == decision.rate
        else { return false }
        switch (decision.action, runtime.record.state) {
        case (.pause, .waiting): return true
        case (.run, .queued), (.throttle, .queued): return slotsFull
        default: return false
        }
    }

    func reconcile(_ id: String) {
        guard haveSnapshot, !stopped, let runtime = jobs[id], !runtime.record.state.isFinal, runtime.record.state != .paused,
            !runtime.stopping
        else { return }
        let decision = policy.decide(job: runtime.record.jobInfo, snapshot: snapshot, usage: accounting.usage,
                                     now: now, timeZone: configuration.timeZone)
        var activeCount = runningCount
        schedule(reconcile(id, decision: decision, activeCount: &activeCount))
    }

    /// The ids of every job in the order a pass decides them: priority first, then the order they were added.
    public func decisionOrder() -> [String] { schedule.map(\.id) }

    /// Puts a new job into `schedule`: after every job of its priority or higher (it is the newest).
    func enqueue(_ id: String, priority: Int) {
        var low = 0, high = schedule.count
        while low < high {
            let mid = (low + high) / 2
            if schedule[mid].priority >= priority { low = mid + 1 } else { high = mid }
        }
        schedule.insert((id, priority), at: low)
    }

    /// Decides one job and carries the action out. Returns when it wants to be woken.
    func reconcile(_ id: String, decision: Decision, reason: String? = nil, activeCount: inout Int) -> C.Instant? {
        guard var runtime = jobs[id] else { return nil }
        if runtime.decision.map({ ($0.action, $0.rule, $0.allowedLinks, $0.rate) })
            .map({ $0 != (decision.action, decision.rule, decision.allowedLinks, decision.rate) }) ?? true {
            events.publish(.decision(job: id, decision))
            runtime.record.rule = decision.rule
            runtime.record.reason = reason ?? decision.reasons.joined(separator: "; ")
        }
        // Keep the decision without its reasons: the record holds them as one text, and with ten
        // thousand queued jobs the copies add up.
        var kept = decision
        kept.reasons = []
        runtime.decision = kept
        let input = PlannerInput(
            decision: decision, snapshot: snapshot, running: runtime.active, boundLink: runtime.boundLink,
            currentRate: runtime.rate, pausedByPolicy: runtime.pausedByPolicy,
            stableFor: lastChange.duration(to: clock.now), resumeAfter: policy.resumeAfter,
            canBind: configuration.canBind)
        var wake: C.Instant?
        if let next = decision.nextChange {
            wake = origin.advanced(by: .seconds(next.timeIntervalSince(originDate)))
        }
        let action = JobPlanner.plan(input)
        switch action {
        case let .start(link, localAddress, rate):
            guard activeCount < configuration.maxActive else {
                if runtime.record.state != .queued && runtime.record.state != .waiting {
                    runtime.record.state = .queued
                }
                runtime.record.reason = "waiting for a free transfer slot (\(configuration.maxActive) run at once)"
                jobs[id] = runtime
                return wake
            }
            activeCount += 1
            jobs[id] = runtime
            start(id, link: link, localAddress: localAddress, rate: rate, budgetKey: decision.budgetKey)
            return wake
        case let .pause(reason):
            jobs[id] = runtime
            stopTransfer(id, reason: reason, byUser: false, cancel: false)
        case let .adjust(rate):
            runtime.rate = rate
            runtime.download?.setRateLimit(rate)
            route(id, link: runtime.link, budgetKey: decision.budgetKey)
            jobs[id] = runtime
            events.publish(.throttled(job: id, rate: rate))
        case let .wait(remaining):
            if !runtime.lastWaitAnnounced {
                events.publish(.waiting(job: id, remaining: remaining))
                runtime.lastWaitAnnounced = true
            }
            runtime.record.state = .waiting
            jobs[id] = runtime
            let resumeAt = clock.now.advanced(by: remaining)
            wake = min(wake ?? resumeAt, resumeAt)
        case .none:
            if runtime.active { route(id, link: runtime.link, budgetKey: decision.budgetKey) }
            if !runtime.active && runtime.record.state == .queued && decision.action == .pause {
                runtime.record.state = .waiting
            }
            jobs[id] = runtime
        }
        return wake
    }

    /// Deletes finished jobs older than the retention, from the store and from memory; at most once a
    /// minute unless `force`.
    func pruneFinished(force: Bool = false) {
        guard let retention = configuration.retention else { return }
        let wallNow = now
        if !force, let last = lastPrune, wallNow.timeIntervalSince(last) < 60 { return }
        lastPrune = wallNow
        let ids: [String]
        do {
            ids = try store.pruneFinished(before: wallNow.addingTimeInterval(-retention.seconds))
        } catch {
            logger.warning("could not prune finished jobs: \(error)")
            return
        }
        guard !ids.isEmpty else { return }
        let gone = Set(ids)
        for id in ids {
            if let record = jobs.removeValue(forKey: id)?.record, destinations[record.destination] == id {
                destinations[record.destination] = nil
            }
        }
        order.removeAll { gone.contains($0) }
        schedule.removeAll { gone.contains($0.id) }
        logger.info("pruned \(ids.count) finished job(s) older than \(retention)")
    }

    func schedule(_ instant: C.Instant?) {
        guard let instant else { return }
        if let scheduled = scheduledWake, scheduled <= instant, clock.now < scheduled { return }
        scheduledWake = instant
        commandSink.yield(.wake(instant))
    }
}
