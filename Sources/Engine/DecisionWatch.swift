import Foundation
import Policy

/// The policy's answer for one kind of download (a size, tags, permissions; no job queued), followed as it
/// changes: the first answer at once, then each time the action, rule, rate or allowed links differ. It is
/// asked again on every engine event (links, a reload, transfers moving bytes against budgets) and when the
/// answer can change by time alone (`nextChange`), so a program holding the stream can pause itself.
struct DecisionWatch<C: Clock>: Sendable where C.Duration == Duration, C.Instant: Sendable {
    let engine: Engine<C>
    let job: JobInfo

    /// What makes two answers the same for a program deciding whether to download.
    struct Answer: Equatable {
        var action: Action
        var rule: String?
        var rate: Int64?
        var allowedLinks: [String]

        init(_ decision: Decision) {
            action = decision.action
            rule = decision.rule
            rate = decision.rate
            allowedLinks = decision.allowedLinks
        }
    }

    /// Answers until the consumer stops listening or the task is cancelled.
    func changes() -> AsyncStream<Decision> {
        let (output, continuation) = AsyncStream.makeStream(of: Decision.self, bufferingPolicy: .bufferingNewest(8))
        let (pokes, poke) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let events = engine.events.subscribe(buffer: 16)
        let engine = self.engine, job = self.job
        let task = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await _ in events { poke.yield() }
                    poke.finish()
                }
                group.addTask {
                    var last: Answer?
                    var timer: Task<Void, Never>?
                    defer { timer?.cancel() }
                    poke.yield()
                    for await _ in pokes {
                        let decision = await engine.decide(job).decision
                        let answer = Answer(decision)
                        if answer != last {
                            last = answer
                            continuation.yield(decision)
                        }
                        timer?.cancel()
                        timer = decision.nextChange.map { next in
                            Task {
                                // A little after the instant, so the policy sees the new window.
                                try? await Task.sleep(for: .seconds(max(0, next.timeIntervalSinceNow) + 0.05))
                                if !Task.isCancelled { poke.yield() }
                            }
                        }
                    }
                }
                await group.next()
                group.cancelAll()
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return output
    }
}
