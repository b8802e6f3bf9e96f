import Engine
import Foundation
import Links
import MeterwiseClient
import Policy
import Synchronization
import TestSupport
import Testing

/// The one decision loop (`run`, `check --watch`, the event stream's answers): links, policy, usage and time
/// in, a decision out each time its outcome changes. Driven by hand and by a manual clock: nothing sleeps.
@Suite struct DecisionLoopTests {
    static let utc = TimeZone(identifier: "UTC")!

    static func policy(_ text: String) throws -> PolicySet {
        try PolicySet.parse(files: [(name: "test.yaml", text: text)])
    }

    static let wifiOnly = """
        version: 1
        defaults: { action: pause }
        rules:
          - { name: wifi, when: { metered: no }, action: run }
          - { name: pause-metered, when: { metered: yes }, action: pause }
        """

    static let night = """
        version: 1
        defaults: { action: pause }
        rules:
          - { name: night, when: { metered: yes, time: "01:00-05:00" }, action: run, via: any }
          - { name: wait-for-night, when: { metered: yes }, action: pause }
        """

    static let allowance = """
        version: 1
        defaults: { action: pause }
        rules:
          - { name: cell-allowance, when: { metered: yes }, action: run, via: any, budget: { bytes: 1MiB, period: monthly } }
          - { name: pause-metered, when: { metered: yes }, action: pause }
        """

    /// Runs the loop in a child task; the test reads what it emits, in order, from `decisions`.
    struct Running {
        var decisions: AsyncStream<Decision>.Iterator
        let task: Task<Result<Void, any Error>, Never>
    }

    static func start<Triggers: AsyncSequence & Sendable>(
        _ loop: DecisionLoop<ManualClock>, job: JobInfo = JobInfo(size: 1 << 20), inputs: DecisionInputs,
        triggers: Triggers, as trigger: @escaping @Sendable (Triggers.Element) -> DecisionInputs.Trigger
    ) -> Running {
        let (stream, continuation) = AsyncStream.makeStream(of: Decision.self)
        let task = Task { () async -> Result<Void, any Error> in
            defer { continuation.finish() }
            do {
                try await loop.run(job: job, inputs: inputs, triggers: triggers, as: trigger) { continuation.yield($0) }
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        return Running(decisions: stream.makeAsyncIterator(), task: task)
    }

    @Test func aDecisionComesOnceThereAreLinksAndAgainOnlyWhenItsOutcomeChanges() async throws {
        let monitor = ManualLinkMonitor()
        let loop = DecisionLoop(clock: ManualClock())
        var running = Self.start(
            loop, inputs: DecisionInputs(policy: try Self.policy(Self.wifiOnly), timeZone: Self.utc),
            triggers: monitor.snapshots(), as: { .links($0) })
        monitor.send(up: ["wlan0", "wwan0"], primary: "wlan0")
        let first = try #require(await running.decisions.next())
        #expect(first.action == .run && first.rule == "wifi" && first.mayRun)
        // The same links again (a new sequence number): the same outcome, so nothing; then the move to wwan0.
        monitor.send(up: ["wlan0", "wwan0"], primary: "wlan0")
        monitor.send(up: ["wwan0"], primary: "wwan0")
        let second = try #require(await running.decisions.next())
        #expect(second.action == .pause && second.rule == "pause-metered" && !second.mayRun)
        monitor.finish()
        #expect(await running.decisions.next() == nil, "the loop did not end with its links")
        if case .failure(let error) = await running.task.value { Issue.record("the loop failed: \(error)") }
    }

    @Test func aDecisionIsMadeAgainWhenTimeAloneChangesItOnTheInjectedClock() async throws {
        let start = ISO8601DateFormatter().date(from: "2026-11-20T00:59:58Z")!
        let clock = ManualClock()
        let monitor = ManualLinkMonitor()
        let loop = DecisionLoop(clock: clock, now: start)
        var running = Self.start(
            loop, inputs: DecisionInputs(policy: try Self.policy(Self.night), timeZone: Self.utc),
            triggers: monitor.snapshots(), as: { .links($0) })
        monitor.send(up: ["wwan0"], primary: "wwan0")
        let waiting = try #require(await running.decisions.next())
        #expect(waiting.rule == "wait-for-night")
        let opens = try #require(waiting.nextChange)
        #expect(opens == start.addingTimeInterval(2))
        await clock.waitForSleepers(1)
        // Asleep until the window opens (and the loop's margin), not a moment before.
        #expect(clock.deadlines == [OffsetInstant(offset: .seconds(2) + loop.margin)])
        clock.advance(by: .seconds(2))
        #expect(clock.sleeperCount == 1, "woken before the deadline")
        clock.advance(by: loop.margin)
        let running2 = try #require(await running.decisions.next())
        #expect(running2.rule == "night" && running2.mayRun)
        running.task.cancel()
        _ = await running.task.value
        #expect(clock.sleeperCount == 0, "the timer outlived the loop")
    }

    @Test func aPolicyReloadAndUsageAreTriggersToo() async throws {
        let (triggers, trigger) = AsyncStream.makeStream(of: DecisionInputs.Trigger.self)
        let loop = DecisionLoop(clock: ManualClock())
        var running = Self.start(
            loop, inputs: DecisionInputs(policy: try Self.policy(Self.wifiOnly), timeZone: Self.utc),
            triggers: triggers, as: { $0 })
        trigger.yield(.links(TestSnapshots.radios(up: ["wwan0"], primary: "wwan0")))
        #expect(try #require(await running.decisions.next()).rule == "pause-metered")
        trigger.yield(.policy(try Self.policy(Self.allowance)))
        let allowed = try #require(await running.decisions.next())
        #expect(allowed.rule == "cell-allowance" && allowed.mayRun)
        let key = try #require(allowed.budgetKey)
        trigger.yield(.usage(Usage(bytes: [key: 2 << 20])))
        let spent = try #require(await running.decisions.next())
        #expect(spent.rule == "pause-metered" && spent.heldBy != nil)
        trigger.finish()
        #expect(await running.decisions.next() == nil)
    }

    @Test func aFailingLinkSourceEndsTheLoopWithItsError() async throws {
        struct Gone: Error {}
        let monitor = ManualLinkMonitor()
        let running = Self.start(
            DecisionLoop(clock: ManualClock()),
            inputs: DecisionInputs(policy: try Self.policy(Self.wifiOnly)),
            triggers: monitor.snapshots(), as: { .links($0) })
        monitor.fail(Gone())
        guard case .failure(let error) = await running.task.value else {
            Issue.record("the loop ended without the monitor's error")
            return
        }
        #expect(error is Gone)
    }

    /// The engine's form: `decide` reads inputs kept elsewhere; the first answer comes before any trigger.
    @Test func aDecideFunctionIsAskedAtOnceThenOnTriggers() async throws {
        let (triggers, trigger) = AsyncStream.makeStream(of: Void.self)
        let (answers, answer) = AsyncStream.makeStream(of: Decision.self)
        let current = Current(Decision(action: .pause, rule: "first"))
        let loop = DecisionLoop(clock: ManualClock())
        let task = Task {
            try await loop.run(triggers: triggers, decide: { _ in current.value }) { answer.yield($0) }
            answer.finish()
        }
        var iterator = answers.makeAsyncIterator()
        #expect(await iterator.next()?.rule == "first")
        current.value = Decision(action: .run, allowedLinks: ["wlan0"], rule: "second")
        trigger.yield()
        #expect(await iterator.next()?.rule == "second")
        trigger.finish()
        #expect(await iterator.next() == nil)
        try await task.value
    }

    /// One definition of "may run" and one of "same decision", and the wire's mirror of the first.
    @Test(arguments: Action.allCases)
    func mayRunAndTheSameDecisionAreDefinedOnce(action: Action) {
        for links in [[], ["wlan0"]] {
            let decision = Decision(
                action: action, rate: action == .throttle ? 1000 : nil, allowedLinks: links, rule: "r")
            #expect(decision.mayRun == (action != .pause && !links.isEmpty))
            let body = ControlAPI.DecisionBody(decision, source: "local")
            #expect(body.mayRun == decision.mayRun, "the wire's mayRun differs for \(action) over \(links)")
            #expect(body.isPause == (action == .pause))
        }
        #expect(Action.pause.rawValue == ControlAPI.DecisionBody.pauseAction)
        var reworded = Decision(action: action, allowedLinks: ["wlan0"], rule: "r", reasons: ["a"])
        let original = reworded.outcome
        reworded.reasons = ["b"]
        reworded.nextChange = Date()
        #expect(reworded.outcome == original, "reasons and nextChange are not the decision")
        reworded.heldBy = "cell-allowance: budget cell is used up"
        #expect(reworded.outcome != original)
    }
}

/// A value the test changes and the loop's `decide` reads.
final class Current: Sendable {
    private let state: Mutex<Decision>
    init(_ value: Decision) { state = Mutex(value) }
    var value: Decision {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }
}
