import MeterwiseClient

/// Why a running transfer is being stopped: what the job becomes once it has.
enum StopCause: UInt8, Sendable, Hashable, CaseIterable {
    /// The policy paused it: it waits, and resumes by itself.
    case policy
    /// The user paused it: it stays paused until `resume`.
    case user
    /// The user cancelled it: its partial file goes.
    case cancel
    /// The engine is shutting down: it is queued again for the next start.
    case shutdown
}

/// Where a job is in its life.
enum JobPhase: Sendable, Hashable {
    /// Not running: the policy allows it, or has not decided it yet, and it waits for its turn.
    case queued
    /// Not running: the policy holds it (a pause decision, or links not stable for `resume_after` yet).
    case waiting
    /// A transfer runs.
    case running
    /// A transfer was asked to stop and has not ended yet: it may still write.
    case stopping(StopCause)
    /// Held by the user.
    case paused
    case completed
    case failed
    case cancelled

    /// What the API shows: a transfer being stopped still runs until it has ended.
    var jobState: JobState {
        switch self {
        case .queued: .queued
        case .waiting: .waiting
        case .running, .stopping: .running
        case .paused: .paused
        case .completed: .completed
        case .failed: .failed
        case .cancelled: .cancelled
        }
    }

    /// The phase a job stored in `state` is in (nothing runs in a stored job: a running one is queued again).
    init(stored state: JobState) {
        switch state {
        case .queued, .running: self = .queued
        case .waiting: self = .waiting
        case .paused: self = .paused
        case .completed: self = .completed
        case .failed: self = .failed
        case .cancelled: self = .cancelled
        }
    }

    /// A transfer is in flight (its `run()` has not returned).
    var hasTransfer: Bool {
        switch self {
        case .running, .stopping: true
        default: false
        }
    }

    var isFinal: Bool { jobState.isFinal }

    /// The policy decides this job: it is neither finished, nor held by the user, nor being stopped.
    var isDecided: Bool {
        switch self {
        case .queued, .waiting, .running: true
        default: false
        }
    }

    static let all: [JobPhase] =
        [.queued, .waiting, .running, .paused, .completed, .failed, .cancelled]
        + StopCause.allCases.map { .stopping($0) }
}

/// How a transfer's `run()` ended.
enum TransferEnd: Sendable, Hashable, CaseIterable {
    case completed, paused, cancelled, failed
}

/// Something that happens to a job.
enum LifecycleEvent: Sendable, Hashable {
    /// The planner's action for the job's current decision (`JobPlanner.plan`); `policyPauses` when the
    /// decision itself is a pause, `slotFree` when a transfer slot is free.
    case planned(JobAction, policyPauses: Bool, slotFree: Bool)
    /// The transfer could not start (a TLS file gone): the job fails with the reason.
    case startFailed
    case userPause
    case userResume
    case userCancel
    /// The engine stops: a running transfer is paused, and queued for the next start.
    case shutdown
    /// The transfer's `run()` returned.
    case ended(TransferEnd)
}

/// What the engine does for a transition, in order.
enum LifecycleAction: Sendable, Hashable {
    /// Start (or resume) the transfer.
    case start(link: String, localAddress: String?, rate: Int64?)
    /// Ask the running transfer to stop (`cancel`: and delete what it wrote).
    case stop(cancel: Bool)
    case setRate(Int64?)
    /// Say the job waits for stable links, `remaining` longer; decide it again then.
    case announceWait(remaining: Duration)
    /// Decide it again after `remaining` (the wait was said already).
    case wake(after: Duration)
    /// The transfer has stopped with its checkpoint written: say "paused".
    case announcePaused(byUser: Bool)
    /// Delete the partial file and checkpoint (a cancel of a job whose transfer is not running, or that
    /// ended paused).
    case removePartial
    case announceCancelled
}

/// The one place a job's state changes: a pure state machine (as swift-nio writes its own), events in,
/// the new state and the actions to take out. The engine keeps one per job (in the index entry) and
/// carries the actions out; it never writes a job's state any other way.
struct JobLifecycle: Sendable, Hashable {
    private(set) var phase: JobPhase
    /// The policy stopped the job's transfer: resuming waits for `resume_after` of stable links.
    private(set) var stoppedByPolicy = false
    /// A `waiting` event was said for the current wait.
    private(set) var waitAnnounced = false
    /// Allowed to run, but every transfer slot was taken when it was last decided.
    private(set) var waitingForSlot = false

    init(_ phase: JobPhase) {
        self.phase = phase
    }

    /// The request cannot be carried out in this phase.
    struct Refusal: Error, Hashable {
        var message: String
    }

    /// Applies `event`; returns the actions to take, in order. Throws only for a user's request that the
    /// phase refuses (the phase is then unchanged).
    mutating func handle(_ event: LifecycleEvent) throws(Refusal) -> [LifecycleAction] {
        switch event {
        case let .planned(action, policyPauses, slotFree):
            return planned(action, policyPauses: policyPauses, slotFree: slotFree)
        case .startFailed:
            guard phase == .running else { return [] }
            phase = .failed
            return []
        case .userPause:
            return try userPause()
        case .userResume:
            guard phase == .paused || phase == .failed else {
                throw Refusal(message: "is \(phase.jobState.rawValue), not paused")
            }
            phase = .queued
            waitAnnounced = false
            waitingForSlot = false
            return []
        case .userCancel:
            return try userCancel()
        case .shutdown:
            guard phase == .running else { return [] }
            phase = .stopping(.shutdown)
            return [.stop(cancel: false)]
        case let .ended(end):
            return ended(end)
        }
    }

    private mutating func planned(_ action: JobAction, policyPauses: Bool, slotFree: Bool) -> [LifecycleAction] {
        switch phase {
        case .queued, .waiting:
            waitingForSlot = false
            switch action {
            case let .start(link, localAddress, rate):
                guard slotFree else {
                    waitingForSlot = true
                    return []
                }
                phase = .running
                waitAnnounced = false
                return [.start(link: link, localAddress: localAddress, rate: rate)]
            case let .wait(remaining):
                phase = .waiting
                if waitAnnounced { return [.wake(after: remaining)] }
                waitAnnounced = true
                return [.announceWait(remaining: remaining)]
            case .pause, .adjust, .none:
                // Nothing runs, so nothing to stop or adjust.
                if phase == .queued && policyPauses { phase = .waiting }
                return []
            }
        case .running:
            switch action {
            case .pause:
                phase = .stopping(.policy)
                stoppedByPolicy = true
                return [.stop(cancel: false)]
            case let .adjust(rate):
                return [.setRate(rate)]
            case .start, .wait, .none:
                return []
            }
        case .stopping, .paused, .completed, .failed, .cancelled:
            return []
        }
    }

    private mutating func userPause() throws(Refusal) -> [LifecycleAction] {
        switch phase {
        case .queued, .waiting:
            phase = .paused
            waitAnnounced = false
            waitingForSlot = false
            return []
        case .running:
            phase = .stopping(.user)
            return [.stop(cancel: false)]
        case .stopping(.policy), .stopping(.shutdown):
            phase = .stopping(.user)
            return []
        case .stopping(.user), .paused:
            return []
        case .stopping(.cancel):
            throw Refusal(message: "is being cancelled")
        case .completed, .failed, .cancelled:
            throw Refusal(message: "is \(phase.jobState.rawValue); it cannot be paused")
        }
    }

    private mutating func userCancel() throws(Refusal) -> [LifecycleAction] {
        switch phase {
        case .queued, .waiting, .paused:
            phase = .cancelled
            return [.removePartial, .announceCancelled]
        case .running, .stopping(.policy), .stopping(.user), .stopping(.shutdown):
            phase = .stopping(.cancel)
            return [.stop(cancel: true)]
        case .stopping(.cancel):
            return []
        case .completed, .failed, .cancelled:
            throw Refusal(message: "is \(phase.jobState.rawValue) already")
        }
    }

    private mutating func ended(_ end: TransferEnd) -> [LifecycleAction] {
        guard phase.hasTransfer else { return [] }
        switch (end, phase) {
        case (.completed, _):
            phase = .completed
            return []
        case (.failed, _):
            phase = .failed
            return []
        case (.cancelled, _):
            phase = .cancelled
            return [.announceCancelled]
        case (.paused, .stopping(.user)):
            phase = .paused
            return [.announcePaused(byUser: true)]
        case (.paused, .stopping(.cancel)):
            // Cancelled while a pause was finishing: the transfer ended paused, so the cancel ends here.
            phase = .cancelled
            return [.removePartial, .announceCancelled]
        case (.paused, .stopping(.shutdown)):
            phase = .queued
            return []
        case (.paused, _):
            // The policy's stop, or a transfer that paused by itself: the policy decides it again.
            phase = .waiting
            stoppedByPolicy = true
            waitAnnounced = false
            return [.announcePaused(byUser: false)]
        }
    }
}
