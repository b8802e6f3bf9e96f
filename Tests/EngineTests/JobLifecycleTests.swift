import TestSupport
import Testing

@testable import Engine

/// The job state machine: every (phase, event) pair against a table, and random event sequences against
/// the invariants the engine relies on.
@Suite struct JobLifecycleTests {
    static let start = JobAction.start(link: "wlan0", localAddress: nil, rate: nil)

    /// The events of the table, by name (the names make a failure readable).
    static let events: [(String, LifecycleEvent)] = [
        ("start", .planned(start, policyPauses: false, slotFree: true)),
        ("start/full", .planned(start, policyPauses: false, slotFree: false)),
        ("pause", .planned(.pause(reason: "metered"), policyPauses: true, slotFree: true)),
        ("adjust", .planned(.adjust(rate: 1000), policyPauses: false, slotFree: true)),
        ("wait", .planned(.wait(remaining: .seconds(5)), policyPauses: false, slotFree: true)),
        ("none/pausing", .planned(.none, policyPauses: true, slotFree: true)),
        ("none", .planned(.none, policyPauses: false, slotFree: true)),
        ("startFailed", .startFailed),
        ("userPause", .userPause),
        ("userResume", .userResume),
        ("userCancel", .userCancel),
        ("shutdown", .shutdown),
        ("ended.completed", .ended(.completed)),
        ("ended.paused", .ended(.paused)),
        ("ended.cancelled", .ended(.cancelled)),
        ("ended.failed", .ended(.failed)),
    ]

    enum Outcome: Equatable {
        case to(JobPhase, [LifecycleAction])
        case refused
    }

    /// What each event does, phase by phase; a pair not listed leaves the phase as it is and does nothing.
    static let table: [String: [JobPhase: Outcome]] = {
        let stop = LifecycleAction.stop(cancel: false)
        let idle: [JobPhase] = [.queued, .waiting]
        var table: [String: [JobPhase: Outcome]] = [:]
        table["start"] = Dictionary(
            uniqueKeysWithValues: idle.map {
                ($0, .to(.running, [.start(link: "wlan0", localAddress: nil, rate: nil)]))
            })
        table["pause"] = [.queued: .to(.waiting, []), .running: .to(.stopping(.policy), [stop])]
        table["none/pausing"] = [.queued: .to(.waiting, [])]
        table["adjust"] = [.running: .to(.running, [.setRate(1000)])]
        table["wait"] = Dictionary(
            uniqueKeysWithValues: idle.map {
                ($0, .to(.waiting, [.announceWait(remaining: .seconds(5))]))
            })
        table["startFailed"] = [.running: .to(.failed, [])]
        table["userPause"] = [
            .queued: .to(.paused, []), .waiting: .to(.paused, []), .running: .to(.stopping(.user), [stop]),
            .stopping(.policy): .to(.stopping(.user), []), .stopping(.shutdown): .to(.stopping(.user), []),
            .stopping(.cancel): .refused, .completed: .refused, .failed: .refused, .cancelled: .refused,
        ]
        table["userResume"] = [.paused: .to(.queued, []), .failed: .to(.queued, [])]
        for phase in JobPhase.all where phase != .paused && phase != .failed { table["userResume"]![phase] = .refused }
        table["userCancel"] = [
            .queued: .to(.cancelled, [.removePartial, .announceCancelled]),
            .waiting: .to(.cancelled, [.removePartial, .announceCancelled]),
            .paused: .to(.cancelled, [.removePartial, .announceCancelled]),
            .completed: .refused, .failed: .refused, .cancelled: .refused,
        ]
        for phase in [JobPhase.running, .stopping(.policy), .stopping(.user), .stopping(.shutdown)] {
            table["userCancel"]![phase] = .to(.stopping(.cancel), [.stop(cancel: true)])
        }
        table["shutdown"] = [.running: .to(.stopping(.shutdown), [stop])]
        let transferring = [JobPhase.running] + StopCause.allCases.map { JobPhase.stopping($0) }
        for phase in transferring {
            table["ended.completed", default: [:]][phase] = .to(.completed, [])
            table["ended.failed", default: [:]][phase] = .to(.failed, [])
            table["ended.cancelled", default: [:]][phase] = .to(.cancelled, [.announceCancelled])
        }
        table["ended.paused"] = [
            .running: .to(.waiting, [.announcePaused(byUser: false)]),
            .stopping(.policy): .to(.waiting, [.announcePaused(byUser: false)]),
            .stopping(.user): .to(.paused, [.announcePaused(byUser: true)]),
            .stopping(.cancel): .to(.cancelled, [.removePartial, .announceCancelled]),
            .stopping(.shutdown): .to(.queued, []),
        ]
        return table
    }()

    @Test func everyPhaseAndEventDoesWhatTheTableSays() {
        var pairs = 0
        for phase in JobPhase.all {
            for (name, event) in Self.events {
                var lifecycle = JobLifecycle(phase)
                let expected = Self.table[name]?[phase] ?? .to(phase, [])
                let outcome: Outcome
                do {
                    let actions = try lifecycle.handle(event)
                    outcome = .to(lifecycle.phase, actions)
                } catch {
                    outcome = .refused
                    #expect(lifecycle.phase == phase, "a refused request changes nothing (\(phase), \(name))")
                }
                #expect(outcome == expected, "\(phase) + \(name)")
                pairs += 1
            }
        }
        #expect(pairs == JobPhase.all.count * Self.events.count)
    }

    @Test func aSecondWaitIsNotSaidAgainButStillWakes() throws {
        var lifecycle = JobLifecycle(.queued)
        let wait = LifecycleEvent.planned(.wait(remaining: .seconds(3)), policyPauses: false, slotFree: true)
        #expect(try lifecycle.handle(wait) == [.announceWait(remaining: .seconds(3))])
        #expect(try lifecycle.handle(wait) == [.wake(after: .seconds(3))])
        _ = try lifecycle.handle(.planned(Self.start, policyPauses: false, slotFree: true))
        _ = try lifecycle.handle(.planned(.pause(reason: "x"), policyPauses: true, slotFree: true))
        _ = try lifecycle.handle(.ended(.paused))
        // A new wait after a new pause is said again.
        #expect(try lifecycle.handle(wait) == [.announceWait(remaining: .seconds(3))])
        #expect(lifecycle.stoppedByPolicy)
    }

    @Test func aFullSlotKeepsTheJobAndSaysSo() throws {
        var lifecycle = JobLifecycle(.waiting)
        #expect(try lifecycle.handle(.planned(Self.start, policyPauses: false, slotFree: false)) == [])
        #expect(lifecycle.phase == .waiting && lifecycle.waitingForSlot)
        _ = try lifecycle.handle(.planned(Self.start, policyPauses: false, slotFree: true))
        #expect(lifecycle.phase == .running && !lifecycle.waitingForSlot)
    }

    /// Random event sequences, answered as the engine and a transfer would (a transfer ends only when one
    /// runs; a start only begins one), against what the engine relies on.
    @Test func randomSequencesKeepTheInvariants() throws {
        let seed = SplitMix.seed(from: "METERWISE_LIFECYCLE_SEED")
        print("JobLifecycleTests seed \(seed) (METERWISE_LIFECYCLE_SEED replays it)")
        var generator = SplitMix(seed: seed)
        for _ in 0..<500 {
            var lifecycle = JobLifecycle(JobPhase.all.filter { !$0.hasTransfer }.randomElement(using: &generator)!)
            var transfer = false  // a transfer's run() is in flight
            var stopAsked = false
            // Completed and cancelled are for good; a failed job runs again only when the user resumes it.
            var wasFinal = lifecycle.phase == .completed || lifecycle.phase == .cancelled
            var stoppedByPolicy = lifecycle.stoppedByPolicy
            for _ in 0..<40 {
                var choices = Self.events.map(\.1).filter {
                    if case .ended = $0 { return false }
                    if case .startFailed = $0 { return false }
                    return true
                }
                if transfer { choices += TransferEnd.allCases.map { .ended($0) } + [.ended(.paused), .ended(.paused)] }
                if transfer && !stopAsked { choices.removeAll { $0 == .ended(.paused) } }
                // The engine says a start failed right after the start, before anything else.
                if lifecycle.phase == .running && transfer && !stopAsked { choices.append(.startFailed) }
                let event = choices.randomElement(using: &generator)!
                let before = lifecycle.phase
                let actions: [LifecycleAction]
                do {
                    actions = try lifecycle.handle(event)
                } catch {
                    #expect(lifecycle.phase == before, "seed \(seed): a refusal changed \(before)")
                    continue
                }
                for action in actions {
                    switch action {
                    case .start:
                        // One writer per destination: never a second transfer.
                        #expect(!transfer, "seed \(seed): started twice (\(before) + \(event))")
                        #expect(!wasFinal, "seed \(seed): a finished job ran again")
                        transfer = true
                        stopAsked = false
                    case .stop:
                        #expect(transfer, "seed \(seed): a stop with nothing running")
                        stopAsked = true
                    case .announcePaused:
                        // "paused" only once the transfer has ended.
                        guard case .ended(.paused) = event else {
                            Issue.record("seed \(seed): paused said on \(event)")
                            break
                        }
                    default:
                        break
                    }
                }
                if case .ended = event, transfer {
                    transfer = false
                    stopAsked = false
                }
                if case .startFailed = event { transfer = false }
                #expect(
                    lifecycle.phase.hasTransfer == transfer, "seed \(seed): \(before) + \(event) -> \(lifecycle.phase)")
                // A job the policy paused has no transfer once the stop is confirmed.
                if case .ended(.paused) = event, before == .stopping(.policy) {
                    #expect(lifecycle.phase == .waiting && !lifecycle.phase.hasTransfer)
                }
                if wasFinal { #expect(lifecycle.phase.isFinal, "seed \(seed): left a final phase on \(event)") }
                // Resuming after a policy stop always waits for stable links: the mark is never lost.
                #expect(!stoppedByPolicy || lifecycle.stoppedByPolicy)
                wasFinal = wasFinal || lifecycle.phase == .completed || lifecycle.phase == .cancelled
                stoppedByPolicy = lifecycle.stoppedByPolicy
            }
        }
    }
}
