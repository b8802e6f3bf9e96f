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
    /// The jobs whose record the engine holds: those that started a transfer and are not finished. The other
    /// unfinished jobs are in `index`; finished ones only in the store.
    var jobs: [String: JobRuntime<C.Instant>] = [:]
    /// Every unfinished job, compactly, in the order a pass decides them.
    var index = JobIndex()
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
        for var record in try store.jobs(in: .running) {
            // A transfer that was running when the process died resumes from its checkpoint at once —
            // unless the process died twice in a row while it ran without saving progress: then the job is
            // the likely cause, and it fails with the reason instead of taking the daemon down again.
            record.interruptions += 1
            if record.interruptions >= 2 {
                record.state = .failed
                record.error = "the daemon stopped \(record.interruptions) times in a row while this job ran, without saving progress in between; `meterwise resume \(record.id)` tries again"
            } else {
                record.state = .queued
            }
            try store.update(record)
        }
        // Records stay in the store: each is read as it is indexed and dropped.
        index.load(try store.unfinishedJobs { JobIndex.Row($0, sequence: $1) })
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
        // Every live job is saved: a running one as queued (it resumes at the next start), and each one's
        // paused time up to now.
        for (id, runtime) in jobs where !runtime.record.state.isFinal {
            if runtime.record.state == .running { jobs[id]?.record.state = .queued }
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
        var nextChange: Date?
        var activeCount = runningCount
        // A decision depends on the job's size, priority, tags and permissions, not on which job it is:
        // jobs alike are decided once per pass.
        // Indices into `decided`, whose entries are then read and updated in place (no copies per job).
        var memo: [SizedClass: Int] = [:]
        var decided: [PassDecision] = []
        // The decision numbers the pass shares, held until it ends: a job that leaves the index during the
        // pass must not free a number other jobs are about to be given.
        var held: [Int32] = []
        defer { for number in held { index.releaseDecision(number) } }
        var count = 0
        // A copy: a job that finishes during the pass leaves the index, and its entry is then empty.
        for slot in index.schedule {
            let entry = index[slot]
            guard !entry.id.isEmpty else { continue }
            var size = entry.policySize
            var live: JobRuntime<C.Instant>?
            if entry.isLive {
                guard let runtime = jobs[entry.id], !runtime.record.state.isFinal, runtime.record.state != .paused,
                    !runtime.stopping
                else { continue }
                size = runtime.record.totalBytes ?? runtime.record.size
                live = runtime
            } else if entry.state == .paused {
                continue
            }
            let key = SizedClass(jobClass: entry.jobClass, size: size ?? -1)
            let known: Int
            if let position = memo[key] {
                known = position
            } else {
                let decision = context.decide(job: index.classes[entry.jobClass].info(size: size))
                let number = index.decisions.number(of: DecisionKey(decision))
                if let number {
                    index.holdDecision(number)
                    held.append(number)
                }
                known = decided.count
                decided.append(PassDecision(decision: decision, reason: decision.reasons.joined(separator: "; "),
                                            number: number))
                memo[key] = known
                // When a decision can change by time alone; converted to the engine's clock once, at the end.
                if let next = decision.nextChange { nextChange = min(nextChange ?? next, next) }
            }
            count += 1
            if decided[known].number == entry.decision,
                Self.unchanged(state: live?.record.state ?? entry.state, running: live?.running ?? false,
                               action: decided[known].decision.action, slotsFull: activeCount >= configuration.maxActive)
            {
                continue  // nothing to do for this job: most of a long queue on a link change
            }
            if live == nil {
                // A link change turns a long queue's decisions around: a queued job costs two numbers and
                // the action planned once for its class, no record and no hashing.
                if decided[known].queuedAction == nil {
                    decided[known].queuedAction = JobPlanner.plan(queuedInput(decided[known].decision))
                }
                var number = decided[known].number
                if let wake = reconcileQueued(slot, decision: decided[known].decision, reason: decided[known].reason,
                                              number: &number, held: &held, action: decided[known].queuedAction!,
                                              activeCount: &activeCount) {
                    earliest = min(earliest ?? wake, wake)
                }
                if decided[known].number == nil { decided[known].number = number }
                continue
            }
            if let wake = reconcile(entry.id, decision: decided[known].decision, reason: decided[known].reason,
                                    activeCount: &activeCount) {
                earliest = min(earliest ?? wake, wake)
            }
        }
        if let nextChange {
            let wake = origin.advanced(by: .seconds(nextChange.timeIntervalSince(originDate)))
            earliest = min(earliest ?? wake, wake)
        }
        schedule(earliest)
        lastPass = (ContinuousClock.now - started, count)
    }

    /// Whether a job with no transfer, whose decision is the one it already had, can only stay as it is:
    /// waiting on a pause, or queued for a run while every transfer slot is taken.
    static func unchanged(state: JobState, running: Bool, action: Action, slotsFull: Bool) -> Bool {
        guard !running else { return false }
        switch (action, state) {
        case (.pause, .waiting): return true
        case (.run, .queued), (.throttle, .queued): return slotsFull
        default: return false
        }
    }

    /// Decides one job now; returns the decision, if one was made.
    @discardableResult
    func reconcile(_ id: String) -> Decision? {
        guard haveSnapshot, !stopped, let entry = index.entry(id) else { return nil }
        var info: JobInfo
        if let runtime = jobs[id] {
            guard !runtime.record.state.isFinal, runtime.record.state != .paused, !runtime.stopping else { return nil }
            info = runtime.record.jobInfo
        } else {
            guard entry.state != .paused else { return nil }
            info = index.classes[entry.jobClass].info(size: entry.policySize)
            info.id = id
        }
        let decision = policy.decide(job: info, snapshot: snapshot, usage: accounting.usage, now: now,
                                     timeZone: configuration.timeZone)
        var activeCount = runningCount
        schedule(reconcile(id, decision: decision, activeCount: &activeCount))
        return decision
    }

    /// The ids of every job in the order a pass decides them: priority first, then the order they were added.
    public func decisionOrder() -> [String] { index.schedule.map { index[$0].id } }

    /// Decides one job and carries the action out. Returns when it wants to be woken.
    func reconcile(_ id: String, decision: Decision, reason: String? = nil, activeCount: inout Int) -> C.Instant? {
        guard let slot = index.slot(of: id) else { return nil }
        let reason = reason ?? decision.reasons.joined(separator: "; ")
        guard var runtime = jobs[id] else {
            var number: Int32?
            var held: [Int32] = []
            defer { for number in held { index.releaseDecision(number) } }
            var wake = reconcileQueued(slot, decision: decision, reason: reason, number: &number, held: &held,
                                       action: JobPlanner.plan(queuedInput(decision)), activeCount: &activeCount)
            if let next = decision.nextChange {
                let change = origin.advanced(by: .seconds(next.timeIntervalSince(originDate)))
                wake = min(wake ?? change, change)
            }
            return wake
        }
        let changed = index.setDecision(slot, DecisionKey(decision))
        if changed { events.publish(.decision(job: id, decision)) }
        var wake: C.Instant?
        if let next = decision.nextChange {
            wake = origin.advanced(by: .seconds(next.timeIntervalSince(originDate)))
        }
        if changed {
            runtime.record.rule = decision.rule
            runtime.record.reason = reason
        }
        // Keep the decision without its reasons: the record holds them as one text.
        var kept = decision
        kept.reasons = []
        runtime.decision = kept
        let input = PlannerInput(
            decision: decision, snapshot: snapshot, running: runtime.active, boundLink: runtime.boundLink,
            currentRate: runtime.rate, pausedByPolicy: runtime.pausedByPolicy,
            stableFor: lastChange.duration(to: clock.now), resumeAfter: policy.resumeAfter,
            canBind: configuration.canBind)
        switch JobPlanner.plan(input) {
        case let .start(link, localAddress, rate):
            guard activeCount < configuration.maxActive else {
                if runtime.record.state != .queued && runtime.record.state != .waiting {
                    runtime.record.state = .queued
                }
                runtime.record.reason = Self.slotReason(configuration.maxActive)
                jobs[id] = runtime
                return wake
            }
            jobs[id] = runtime
            // A job that fails to start (a TLS file gone) takes no slot.
            if start(id, link: link, localAddress: localAddress, rate: rate, budgetKey: decision.budgetKey) { activeCount += 1 }
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

    /// What the planner is told of a job that never started here: nothing runs, no pause of its own.
    func queuedInput(_ decision: Decision) -> PlannerInput {
        PlannerInput(
            decision: decision, snapshot: snapshot, running: false, pausedByPolicy: false,
            stableFor: lastChange.duration(to: clock.now), resumeAfter: policy.resumeAfter,
            canBind: configuration.canBind)
    }

    /// `reconcile` for a job that never started here, with the action `JobPlanner` gave for `decision`: its
    /// entry changes, and its record is read from the store only when it starts. `number` is the decision's
    /// number in the index when known (the pass shares it between jobs alike), and is set when this job
    /// gives the decision its number; that number is then held at once (added to `held`, which the caller
    /// releases), before this job can leave the index and free it.
    func reconcileQueued(_ slot: Int32, decision: Decision, reason: String, number: inout Int32?, held: inout [Int32],
                         action: JobAction, activeCount: inout Int) -> C.Instant? {
        let entry = index[slot]
        let changed: Bool
        if let number {
            changed = index.setDecision(slot, number: number)
        } else {
            changed = index.setDecision(slot, DecisionKey(decision))
            let given = index[slot].decision
            index.holdDecision(given)
            held.append(given)
            number = given
        }
        if changed { events.publish(.decision(job: entry.id, decision)) }
        // The decision's own time-driven change is the caller's to schedule (a pass does it once).
        var wake: C.Instant?
        var state = entry.state
        var flags = entry.flags
        flags.remove(.waitingForSlot)
        switch action {
        case let .start(link, localAddress, rate):
            guard activeCount < configuration.maxActive else {
                if state != .queued && state != .waiting { state = .queued }
                flags.insert(.waitingForSlot)
                break
            }
            // Not readable from the store: the entry may be gone, and is left as it is.
            guard promote(slot, decision: decision, reason: reason) else { return wake }
            if start(entry.id, link: link, localAddress: localAddress, rate: rate, budgetKey: decision.budgetKey) { activeCount += 1 }
            return wake
        case let .wait(remaining):
            if !flags.contains(.waitAnnounced) {
                events.publish(.waiting(job: entry.id, remaining: remaining))
                flags.insert(.waitAnnounced)
            }
            state = .waiting
            let resumeAt = clock.now.advanced(by: remaining)
            wake = min(wake ?? resumeAt, resumeAt)
        case .none, .pause, .adjust:
            // Nothing runs, so nothing to stop or adjust.
            if state == .queued && decision.action == .pause { state = .waiting }
        }
        index.modify(slot) {
            $0.state = state
            $0.flags = flags
        }
        return wake
    }

    /// Reads a job's record from the store to start its transfer: from now on `jobs` holds it.
    func promote(_ slot: Int32, decision: Decision, reason: String) -> Bool {
        let entry = index[slot]
        let stored: JobRecord?
        do {
            stored = try store.job(entry.id)
        } catch {
            logger.error("\(error)", metadata: ["job": "\(entry.id)"])
            return false
        }
        guard var record = stored else {
            logger.error("job \(entry.id) is gone from the store; dropping it")
            index.remove(entry.id)
            return false
        }
        record.state = entry.state
        record.rule = decision.rule
        record.reason = reason
        var runtime = JobRuntime<C.Instant>(record: record)
        var kept = decision
        kept.reasons = []
        runtime.decision = kept
        // Paused time saved before (a restart, a failed job resumed) goes on counting.
        if let saved = (try? store.pausedSeconds([entry.id]))?[entry.id] { runtime.pausedTotal = .seconds(saved) }
        runtime.lastWaitAnnounced = entry.flags.contains(.waitAnnounced)
        jobs[entry.id] = runtime
        index.modify(slot) { $0.flags.insert(.live) }
        return true
    }

    /// A finished job leaves memory once its transfer has ended: the store has its record.
    func retire(_ id: String) {
        if let runtime = jobs[id] {
            guard runtime.record.state.isFinal, !runtime.running else { return }
            jobs[id] = nil
        }
        index.remove(id)
    }

    static func slotReason(_ maxActive: Int) -> String {
        "waiting for a free transfer slot (\(maxActive) run at once)"
    }

    /// Deletes finished jobs older than the retention from the store; at most once a minute unless `force`.
    func pruneFinished(force: Bool = false) {
        guard let retention = configuration.retention else { return }
        let wallNow = now
        if !force, let last = lastPrune, wallNow.timeIntervalSince(last) < 60 { return }
        lastPrune = wallNow
        do {
            let ids = try store.pruneFinished(before: wallNow.addingTimeInterval(-retention.seconds))
            if !ids.isEmpty { logger.info("pruned \(ids.count) finished job(s) older than \(retention)") }
        } catch {
            logger.warning("could not prune finished jobs: \(error)")
        }
    }

    func schedule(_ instant: C.Instant?) {
        guard let instant else { return }
        if let scheduled = scheduledWake, scheduled <= instant, clock.now < scheduled { return }
        scheduledWake = instant
        commandSink.yield(.wake(instant))
    }
}

// Outside the generic `Engine`: a pass reads these once per job, and a generic type's fields are reached
// through its value witnesses (a profile of a pass over 20 000 jobs: a third of its time).
/// One decision of a pass, shared by every job of the same class and size.
struct PassDecision {
    var decision: Decision
    /// One text shared by every job alike, not a copy each.
    var reason: String
    /// The decision's number in the index (nil: no job had it when the pass made it, and none has taken
    /// it yet). A job whose entry holds this number had this decision already.
    var number: Int32?
    /// What a job that never started does on this decision: the same for every one of them, so planned
    /// once.
    var queuedAction: JobAction?
}

/// Jobs alike: the same class (priority, tags, permissions) and size.
struct SizedClass: Hashable {
    var jobClass: Int32
    var size: Int64
}
