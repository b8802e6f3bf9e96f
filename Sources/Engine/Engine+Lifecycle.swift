import Foundation
import MeterwiseClient
import Transfer

/// Where a job's state changes: every change goes through its `JobLifecycle` here, and the record, the
/// transfer count and waiting users follow.
extension Engine {
    /// Applies `event` to the job in `slot`; returns the actions to carry out. Throws a refusal only for a
    /// user's request the job's phase refuses (nothing changes then).
    @discardableResult
    func transition(_ slot: Int32, _ event: LifecycleEvent) throws(JobLifecycle.Refusal) -> [LifecycleAction] {
        var lifecycle = index[slot].lifecycle
        let before = lifecycle.phase
        let actions = try lifecycle.handle(event)
        index.modify(slot) { $0.lifecycle = lifecycle }
        let after = lifecycle.phase
        if before.hasTransfer != after.hasTransfer { runningCount += after.hasTransfer ? 1 : -1 }
        let id = index[slot].id
        if jobs[id] != nil { jobs[id]!.record.state = after.jobState }
        return actions
    }

    /// `transition` for the events no phase refuses (decisions, a transfer's end, a shutdown).
    @discardableResult
    func apply(_ slot: Int32, _ event: LifecycleEvent) -> [LifecycleAction] {
        (try? transition(slot, event)) ?? []
    }

    /// Whether the job's transfer runs and is not being stopped.
    func isTransferring(_ id: String) -> Bool {
        index.entry(id)?.lifecycle.phase == .running
    }

    /// Asks the job's transfer to stop, without waiting: its end comes back through `runEnded`. The
    /// decision's time is kept for the stop's latency; a policy stop starts the paused time.
    func requestStop(_ id: String, reason: String, byPolicy: Bool, cancel: Bool) {
        guard var runtime = jobs[id], let download = runtime.download else { return }
        runtime.stop = (reason, runtime.stop?.decidedAt ?? ContinuousClock.now, runtime.stop?.wallClock ?? now)
        if byPolicy { runtime.pausedSince = runtime.pausedSince ?? clock.now }
        jobs[id] = runtime
        download.requestStop(cancel: cancel)
    }

    /// Returns once none of these jobs has a transfer in flight.
    func untilTransfersEnd(_ ids: [String]) async {
        for id in ids {
            while let entry = index.entry(id), entry.lifecycle.phase.hasTransfer {
                await withCheckedContinuation { stopWaiters[id, default: []].append($0) }
            }
        }
    }

    /// A user's pause, resume or cancel: the lifecycle says what it does; a transfer being stopped is
    /// waited for, so what the caller reads next is true ("paused" means no more bytes come).
    func userRequest(
        _ id: String, _ event: LifecycleEvent, stopReason: String,
        update: (inout JobRecord) -> Void = { _ in }
    ) async throws(EngineError) {
        guard let slot = index.slot(of: id) else {
            // Finished: the store's state refuses it (a resume of a failed job is `resume`'s).
            let state = view(id)?.record.state ?? .cancelled
            var lifecycle = JobLifecycle(JobPhase(stored: state))
            do throws(JobLifecycle.Refusal) {
                _ = try lifecycle.handle(event)
            } catch {
                throw EngineError(.conflict, "job \(id) \(error.message)")
            }
            return
        }
        let actions: [LifecycleAction]
        do throws(JobLifecycle.Refusal) {
            actions = try transition(slot, event)
        } catch {
            throw EngineError(.conflict, "job \(id) \(error.message)")
        }
        if case .stopping = index[slot].lifecycle.phase, var stop = jobs[id]?.stop {
            stop.reason = stopReason  // the user's reason replaces the policy's
            jobs[id]?.stop = stop
        }
        for action in actions {
            switch action {
            case let .stop(cancel):
                requestStop(id, reason: stopReason, byPolicy: false, cancel: cancel)
            case .removePartial:
                if let record = jobs[id]?.record ?? view(id)?.record { Self.removePartialFiles(of: record) }
            case .announceCancelled:
                events.publish(.cancelled(job: id))
            default:
                break
            }
        }
        try save(id, update)
        await untilTransfersEnd([id])
        retire(id)
    }

    /// Saves a job's state after a user's request: a live job's record, or the stored record of one that
    /// never started (the store's state is then the lifecycle's).
    func save(_ id: String, _ body: (inout JobRecord) -> Void = { _ in }) throws(EngineError) {
        if jobs[id] != nil {
            body(&jobs[id]!.record)
            persist(id)
            return
        }
        guard var record = try store.job(id), let entry = index.entry(id) else { return }
        record.state = entry.state
        body(&record)
        record.updatedAt = now
        try store.update(record)
    }

    /// A transfer's `run()` returned with `end`: the lifecycle says what the job becomes; the result's
    /// figures go into the record, and whoever waits for the stop hears of it.
    func transferEnded(_ id: String, slot: Int32, _ end: TransferEnd) {
        let actions = apply(slot, .ended(end))
        let stop = jobs[id]?.stop
        jobs[id]?.stop = nil
        // Every stop that was asked for is counted, whatever it ends as (paused, cancelled, queued again).
        let latency = stop.map { ContinuousClock.now - $0.decidedAt } ?? .zero
        if stop != nil { stopLatency.record(latency) }
        for action in actions {
            switch action {
            case let .announcePaused(byUser):
                events.publish(
                    .paused(
                        job: id, reason: stop?.reason ?? "the transfer stopped", byUser: byUser,
                        timing: PauseTiming(decidedAt: stop?.wallClock ?? now, stoppedAfter: latency)))
            case .removePartial:
                if let record = jobs[id]?.record { Self.removePartialFiles(of: record) }
            case .announceCancelled:
                events.publish(.cancelled(job: id))
            default:
                break
            }
        }
        for waiter in stopWaiters.removeValue(forKey: id) ?? [] { waiter.resume() }
    }
}
