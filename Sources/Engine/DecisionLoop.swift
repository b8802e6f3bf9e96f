import ConfigKit
import Foundation
import Policy
import Synchronization

/// Links and policy in, decisions out: the one loop behind `meterwise run`, `check --watch` and the event
/// stream's answers to a question (the engine's per-job pass decides with the same `Decision.mayRun` and
/// `Decision.Outcome`).
///
/// It decides at once, again on every trigger (links, a policy reload, usage, an engine event) and at the
/// instant a decision says it can change by time alone (`nextChange`, plus `margin`), on the injected
/// clock, so tests advance a manual clock instead of sleeping. A burst of triggers gives one decision; a
/// decision is passed on only when its outcome differs from the last one. Everything runs in one task
/// group: the triggers, the timer, the caller's `emit`. It ends when the triggers end (a scenario's end, an
/// engine that stopped), when `emit` throws, or when the task is cancelled.
public struct DecisionLoop<C: Clock>: Sendable where C.Duration == Duration, C.Instant: Sendable {
    let clock: C
    let origin: C.Instant
    let originDate: Date
    /// How long after a decision's `nextChange` it is decided again, so the policy sees the new window.
    public var margin: Duration

    /// A loop on `clock`, whose instant now is the wall-clock time `now`.
    public init(clock: C, now: Date = Date(), margin: Duration = .milliseconds(50)) {
        self.init(clock: clock, origin: clock.now, originDate: now, margin: margin)
    }

    init(clock: C, origin: C.Instant, originDate: Date, margin: Duration = .milliseconds(50)) {
        self.clock = clock
        self.origin = origin
        self.originDate = originDate
        self.margin = margin
    }

    /// The wall-clock time on the loop's clock.
    public var now: Date { originDate.addingTimeInterval(origin.duration(to: clock.now).seconds) }

    /// The instant on the loop's clock of a wall-clock time (at most ten years ahead).
    func instant(of date: Date) -> C.Instant {
        origin.advanced(by: .seconds(min(date.timeIntervalSince(originDate), 10 * 365 * 86_400)))
    }

    /// Decides `job` from `inputs` as the `triggers` change them: the first decision once there is a link
    /// snapshot, then each one whose outcome differs.
    public func run<Triggers: AsyncSequence & Sendable>(
        job: JobInfo, inputs: DecisionInputs, triggers: Triggers,
        as trigger: @escaping @Sendable (Triggers.Element) -> DecisionInputs.Trigger,
        emit: (Decision) async throws -> Void
    ) async throws {
        try await run(inputs: inputs, triggers: triggers, as: trigger, decide: { $0?.decide(job, now: $1) }, emit: emit)
    }

    /// Decides with `decide`, which reads inputs kept elsewhere (the engine's live links, policy and
    /// budgets): at once, then on every element of `triggers`.
    public func run<Triggers: AsyncSequence & Sendable>(
        triggers: Triggers, decide: @escaping @Sendable (Date) async -> Decision?,
        emit: (Decision) async throws -> Void
    ) async throws {
        try await run(inputs: nil, triggers: triggers, as: { _ in .changed }, decide: { await decide($1) }, emit: emit)
    }

    func run<Triggers: AsyncSequence & Sendable>(
        inputs: DecisionInputs?, triggers: Triggers,
        as trigger: @escaping @Sendable (Triggers.Element) -> DecisionInputs.Trigger,
        decide: @escaping @Sendable (DecisionInputs?, Date) async -> Decision?,
        emit: (Decision) async throws -> Void
    ) async throws {
        let shared = LoopInputs(inputs)
        let (pokes, poke) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let clock = self.clock
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask {
                defer { poke.finish() }
                for try await element in triggers {
                    shared.apply(trigger(element))
                    poke.yield()
                }
            }
            // The timer: one child per deadline, ended early when a later decision moves the deadline.
            var armed: C.Instant?
            var superseded: AsyncStream<Void>.Continuation?
            defer { superseded?.finish() }
            var last: Decision.Outcome?
            poke.yield()
            for await _ in pokes {
                let (inputs, timerFired) = shared.take()
                if timerFired { armed = nil }
                guard let decision = await decide(inputs, now) else { continue }
                if decision.outcome != last {
                    last = decision.outcome
                    try await emit(decision)
                }
                // A deadline already past (the clocks disagree by a hair) is tried again after `margin`, not at once.
                let deadline = decision.nextChange.map { max(instant(of: $0), clock.now).advanced(by: margin) }
                guard deadline != armed else { continue }
                superseded?.finish()
                superseded = nil
                armed = deadline
                guard let deadline else { continue }
                let (stream, continuation) = AsyncStream.makeStream(of: Void.self)
                superseded = continuation
                group.addTask {
                    await withTaskGroup(of: Bool.self) { race in
                        race.addTask { (try? await clock.sleep(until: deadline, tolerance: nil)) != nil }
                        race.addTask {
                            for await _ in stream {}
                            return false
                        }
                        let fired = await race.next() ?? false
                        race.cancelAll()
                        if fired {
                            shared.timerFired()
                            poke.yield()
                        }
                    }
                }
            }
        }
    }
}

/// The inputs the loop's triggers keep up to date, and whether its timer fired, between two decisions.
final class LoopInputs: Sendable {
    private let state: Mutex<(inputs: DecisionInputs?, timerFired: Bool)>

    init(_ inputs: DecisionInputs?) {
        state = Mutex((inputs, false))
    }

    func apply(_ trigger: DecisionInputs.Trigger) {
        state.withLock { $0.inputs?.apply(trigger) }
    }

    func timerFired() {
        state.withLock { $0.timerFired = true }
    }

    /// The inputs now, and whether the timer fired since the last call.
    func take() -> (DecisionInputs?, Bool) {
        state.withLock { state in
            defer { state.timerFired = false }
            return (state.inputs, state.timerFired)
        }
    }
}
