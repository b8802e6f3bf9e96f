import AsyncHTTPClient
import Foundation
import Links
import Logging
import MeterwiseClient
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
        case wake(C.Instant)
        case stop
    }

    public let store: JobStore
    public nonisolated let events = EventHub()
    public nonisolated let accounting: LinkAccounting
    /// Why the primary uplink is intercepted now (a captive portal, a limited network), for the transfers'
    /// TLS failures (`DownloadRequest.interceptedLink`); nil when it is not.
    nonisolated let intercepted = InterceptedLink()
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
    /// Jobs whose transfer is in flight (running or stopping), kept in step by `transition`.
    var runningCount = 0
    /// Users' requests (pause, cancel) waiting for a job's transfer to end.
    var stopWaiters: [String: [CheckedContinuation<Void, Never>]] = [:]
    /// Decision → stopped, for every stop the policy or a user asked for (`/metrics`).
    public internal(set) var stopLatency = LatencyHistogram()
    /// What every job's transfers fetched, discarded and fetched again since the daemon started (`/metrics`).
    public internal(set) var totals = TransferTotals()
    var stopped = false
    /// Why `run()` must throw once it has stopped: the link monitor failed for good.
    var failure: EngineError?
    /// No decision is made before the monitor's first snapshot: an empty snapshot would pause everything.
    var haveSnapshot = false
    let commands: AsyncStream<Command>
    let commandSink: AsyncStream<Command>.Continuation

    public init(
        policy: PolicySet, store: JobStore, monitor: any LinkMonitor, clock: C, now: Date = Date(),
        configuration: EngineConfiguration = EngineConfiguration(),
        logger: Logger = Logger(label: "meterwise.engine")
    ) throws(EngineError) {
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
                record.error =
                    "the daemon stopped \(record.interruptions) times in a row while this job ran, without saving progress in between; `meterwise resume \(record.id)` tries again"
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
        var ending: [String] = []
        for id in jobs.keys {
            guard let slot = index.slot(of: id), index[slot].lifecycle.phase.hasTransfer else { continue }
            ending.append(id)
            if !apply(slot, .shutdown).isEmpty {
                requestStop(id, reason: "the engine stopped", byPolicy: false, cancel: false)
            }
        }
        // Each transfer's end is handled as any other (`runEnded`): a running one is queued again for the
        // next start, one that completed meanwhile is completed.
        await untilTransfersEnd(ending)
        // Every live job is saved, with its paused time up to now.
        for (id, runtime) in jobs where !runtime.record.state.isFinal { persist(id) }
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
        // A portal signed into (connectivity and route metrics changed, the same primary) is not a flapping
        // link: no hysteresis for it.
        if !haveSnapshot || !snapshot.keepsLinksAndPrimary(of: self.snapshot) { lastChange = clock.now }
        self.snapshot = snapshot
        haveSnapshot = true
        intercepted.set(snapshot.primary.flatMap(ConnectivityGate.blocked))
        accounting.apply(snapshot)
        events.publish(.links(snapshot))
        // A link change may end an outage: transfers waiting to retry try again now. It may also change which
        // link reaches a job's sources: a mirror job judges them again (a source set aside may join, one now
        // reached over a link the job may not use stops; docs/mirrors.md).
        for (id, runtime) in jobs where isTransferring(id) {
            runtime.download?.retryNow()
        }
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
        let context = policy.context(
            snapshot: snapshot, usage: accounting.usage, now: now, timeZone: configuration.timeZone)
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
            guard !entry.id.isEmpty, entry.lifecycle.phase.isDecided else { continue }
            var size = entry.policySize
            if entry.isLive {
                guard let runtime = jobs[entry.id] else { continue }
                size = runtime.record.policySize
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
                decided.append(
                    PassDecision(
                        decision: decision, reason: decision.reasons.joined(separator: "; "),
                        number: number))
                memo[key] = known
                // When a decision can change by time alone; converted to the engine's clock once, at the end.
                if let next = decision.nextChange { nextChange = min(nextChange ?? next, next) }
            }
            count += 1
            if decided[known].number == entry.decision,
                Self.unchanged(
                    entry.lifecycle.phase, action: decided[known].decision.action,
                    slotsFull: activeCount >= configuration.maxActive)
            {
                continue  // nothing to do for this job: most of a long queue on a link change
            }
            let action: JobAction
            if entry.isLive {
                action = JobPlanner.plan(plannerInput(entry, decision: decided[known].decision))
            } else {
                // A link change turns a long queue's decisions around: a job that never started costs two
                // numbers and the action planned once for its class, no record and no hashing.
                if decided[known].queuedAction == nil {
                    decided[known].queuedAction = JobPlanner.plan(
                        plannerInput(entry, decision: decided[known].decision))
                }
                action = decided[known].queuedAction!
            }
            var number = decided[known].number
            if let wake = decide(
                slot, decision: decided[known].decision, reason: decided[known].reason,
                number: &number, held: &held, action: action, activeCount: &activeCount)
            {
                earliest = min(earliest ?? wake, wake)
            }
            if decided[known].number == nil { decided[known].number = number }
        }
        if let nextChange {
            let wake = origin.advanced(by: .seconds(nextChange.timeIntervalSince(originDate)))
            earliest = min(earliest ?? wake, wake)
        }
        schedule(earliest)
        lastPass = (ContinuousClock.now - started, count)
    }

    /// Whether a job whose decision is the one it already had can only stay as it is: waiting on a pause,
    /// or queued for a run while every transfer slot is taken.
    static func unchanged(_ phase: JobPhase, action: Action, slotsFull: Bool) -> Bool {
        switch (action, phase) {
        case (.pause, .waiting): return true
        case (.run, .queued), (.throttle, .queued): return slotsFull
        default: return false
        }
    }

    /// Decides one job now; returns the decision, if one was made.
    @discardableResult
    func reconcile(_ id: String) -> Decision? {
        guard haveSnapshot, !stopped, let slot = index.slot(of: id) else { return nil }
        let entry = index[slot]
        guard entry.lifecycle.phase.isDecided else { return nil }
        var info: JobInfo
        if let runtime = jobs[id] {
            info = runtime.record.jobInfo
        } else {
            info = index.classes[entry.jobClass].info(size: entry.policySize)
            info.id = id
        }
        let decision = policy.decide(
            job: info, snapshot: snapshot, usage: accounting.usage, now: now,
            timeZone: configuration.timeZone)
        var activeCount = runningCount
        var number: Int32?
        var held: [Int32] = []
        defer { for number in held { index.releaseDecision(number) } }
        var wake = decide(
            slot, decision: decision, reason: decision.reasons.joined(separator: "; "), number: &number,
            held: &held, action: JobPlanner.plan(plannerInput(entry, decision: decision)),
            activeCount: &activeCount)
        if let next = decision.nextChange {
            let change = origin.advanced(by: .seconds(next.timeIntervalSince(originDate)))
            wake = min(wake ?? change, change)
        }
        schedule(wake)
        return decision
    }

    /// The ids of every job in the order a pass decides them: priority first, then the order they were added.
    public func decisionOrder() -> [String] { index.schedule.map { index[$0].id } }

    /// What the planner is told of a job: its transfer (if one runs), and whether the policy stopped it before.
    func plannerInput(_ entry: JobEntry, decision: Decision) -> PlannerInput {
        let runtime = entry.isLive ? jobs[entry.id] : nil
        return PlannerInput(
            decision: decision, snapshot: snapshot, running: entry.lifecycle.phase == .running,
            boundLink: runtime?.boundLink, currentRate: runtime?.rate,
            pausedByPolicy: entry.lifecycle.stoppedByPolicy, stableFor: lastChange.duration(to: clock.now),
            resumeAfter: policy.resumeAfter, canBind: configuration.canBind)
    }

    /// Gives the job in `slot` its decision and carries out what its lifecycle makes of the planner's
    /// `action`: the one path for every job, started here or not. A job that never started keeps no record
    /// in memory until it starts. `number` is the decision's number in the index when known (a pass shares
    /// it between jobs alike), and is set when this job gives the decision its number; that number is then
    /// held at once (added to `held`, which the caller releases), before this job can leave the index and
    /// free it. Returns when the job wants to be decided again (its decision's own time-driven change is
    /// the caller's to schedule).
    func decide(
        _ slot: Int32, decision: Decision, reason: String, number: inout Int32?, held: inout [Int32],
        action: JobAction, activeCount: inout Int
    ) -> C.Instant? {
        let id = index[slot].id
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
        if changed { events.publish(.decision(job: id, decision)) }
        if jobs[id] != nil {
            if changed {
                jobs[id]!.record.rule = decision.rule
                jobs[id]!.record.reason = reason
            }
            // Keep the decision without its reasons: the record holds them as one text.
            var kept = decision
            kept.reasons = []
            jobs[id]!.decision = kept
            // A rule's `mode` may change with the decision (a reload, another rule matching).
            if let download = jobs[id]!.download { download.setBackground(jobs[id]!.mode == .background) }
        }
        let slotFree = activeCount < configuration.maxActive
        if case .start = action, slotFree, !index[slot].isLive {
            // Not readable from the store: the entry may be gone, and is left as it is.
            guard promote(slot, decision: decision, reason: reason) else { return nil }
        }
        var decision = decision
        var action = action
        var spaceWake: C.Instant?
        if policy.defaults.keepFree != nil, decision.mayRun, jobs[id] != nil {
            let moving: Bool
            switch action {
            case .start, .adjust: moving = true
            default: moving = index[slot].lifecycle.phase == .running
            }
            if moving, let problem = spaceProblem(id) {
                // `keep_free`: the job waits (or its transfer pauses) with the numbers, and is looked at
                // again when a job ends and every few seconds.
                decision = SpaceGate.apply(decision, problem: problem)
                action = JobPlanner.plan(plannerInput(index[slot], decision: decision))
                let said = decision.reasons.joined(separator: "; ")
                if jobs[id]!.record.reason != said {
                    jobs[id]!.record.rule = decision.rule
                    jobs[id]!.record.reason = said
                    events.publish(.decision(job: id, decision))
                }
            } else if moving, jobs[id]!.record.reason?.contains("; statvfs)") == true {
                // The space is there again: the job says its policy's reason, not the old wait.
                jobs[id]!.record.reason = reason
                events.publish(.decision(job: id, decision))
            }
            if moving { spaceWake = clock.now.advanced(by: Self.spaceRecheck) }
        }
        let actions = apply(slot, .planned(action, policyPauses: decision.action == .pause, slotFree: slotFree))
        if index[slot].lifecycle.waitingForSlot, jobs[id] != nil {
            jobs[id]!.record.reason = Self.slotReason(configuration.maxActive)
        }
        var wake: C.Instant?
        if case .none = action, index[slot].lifecycle.phase == .running {
            route(id, link: jobs[id]?.link, budgetKey: decision.budgetKey)
        }
        for step in actions {
            switch step {
            case let .start(link, localAddress, rate):
                if start(id, link: link, localAddress: localAddress, rate: rate, budgetKey: decision.budgetKey) {
                    activeCount += 1
                }
            case let .stop(cancel):
                var why = "the policy pauses this job"
                if case let .pause(reason) = action { why = reason }
                requestStop(id, reason: why, byPolicy: true, cancel: cancel)
            case let .setRate(rate):
                jobs[id]?.rate = rate
                jobs[id]?.download?.setRateLimit(rate)
                route(id, link: jobs[id]?.link, budgetKey: decision.budgetKey)
                events.publish(.throttled(job: id, rate: rate))
            case let .announceWait(remaining):
                events.publish(.waiting(job: id, remaining: remaining))
                let resumeAt = clock.now.advanced(by: remaining)
                wake = min(wake ?? resumeAt, resumeAt)
            case let .wake(remaining):
                let resumeAt = clock.now.advanced(by: remaining)
                wake = min(wake ?? resumeAt, resumeAt)
            case .announcePaused, .removePartial, .announceCancelled:
                break  // not a decision's: a transfer's end or a user's request
            }
        }
        if let spaceWake { wake = min(wake ?? spaceWake, spaceWake) }
        return wake
    }

    /// How often a job that `keep_free` holds, or one that runs under it, is looked at again: a `statvfs`
    /// and a `stat` per job, nothing measurable.
    static var spaceRecheck: Duration { .seconds(2) }

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
        jobs[entry.id] = runtime
        index.modify(slot) { $0.flags.formUnion(.live) }
        return true
    }

    /// A finished job leaves memory once its transfer has ended: the store has its record.
    func retire(_ id: String) {
        if let entry = index.entry(id), !entry.lifecycle.phase.isFinal { return }
        jobs[id] = nil
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
