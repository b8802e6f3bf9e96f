import Foundation
import Policy

/// The policy's answer for one kind of download (a size, tags, permissions; no job queued), followed as it
/// changes: the event stream's answer to a question. A `DecisionLoop` over the engine: the first answer at
/// once, then each one whose outcome differs (`Decision.Outcome`). It is asked again on every engine event
/// (links, a reload, transfers moving bytes against budgets) and when the answer can change by time alone
/// (`nextChange`), so a program holding the stream can pause itself.
struct DecisionWatch<C: Clock>: Sendable where C.Duration == Duration, C.Instant: Sendable {
    let engine: Engine<C>
    let job: JobInfo

    /// Passes each answer to `emit` until the engine stops, `emit` throws or the task is cancelled.
    func run(emit: (Decision) async throws -> Void) async throws {
        let engine = self.engine
        let job = self.job
        let loop = DecisionLoop(clock: engine.clock, origin: engine.origin, originDate: engine.originDate)
        try await loop.run(
            triggers: engine.events.subscribe(buffer: 16), decide: { _ in await engine.decide(job).decision },
            emit: emit)
    }
}
