import MeterwiseClient
import Policy
import Testing

@testable import Engine

/// The compact index of unfinished jobs: the order a pass walks, shared classes and decisions, counts.
@Suite struct JobIndexTests {

    func row(
        _ id: String, priority: Int = 0, tags: [String] = [], size: Int64? = nil, state: JobState = .queued,
        owner: UInt32? = nil, sequence: Int64 = 0
    ) -> JobIndex.Row {
        var record = JobRecord(
            id: id, url: "http://127.0.0.1:9/\(id)", destination: "/tmp/\(id)", size: size,
            priority: priority, tags: tags, ownerUID: owner)
        record.state = state
        return JobIndex.Row(record, sequence: sequence)
    }

    func ids(_ index: JobIndex) -> [String] { index.schedule.map { index[$0].id } }

    @Test func insertKeepsPriorityThenAge() {
        var index = JobIndex()
        for (sequence, (id, priority)) in [("a", 0), ("b", 0), ("c", 5), ("d", 5), ("e", -1), ("f", 5)].enumerated() {
            index.insert(row(id, priority: priority, sequence: Int64(sequence)))
        }
        #expect(ids(index) == ["c", "d", "f", "a", "b", "e"])
    }

    /// A job indexed again (a failed job resumed) goes back to its place among its priority, not last.
    @Test func aJobIndexedAgainTakesItsOldPlace() {
        var index = JobIndex()
        for (sequence, id) in ["a", "b", "c"].enumerated() { index.insert(row(id, sequence: Int64(sequence + 1))) }
        index.remove("a")
        #expect(ids(index) == ["b", "c"])
        index.insert(row("a", sequence: 1))
        #expect(ids(index) == ["a", "b", "c"])
    }

    @Test func loadSortsOnceWithTheSameOrder() {
        var inserted = JobIndex()
        var loaded = JobIndex()
        let rows = (0..<200).map { row("j\($0)", priority: [0, 2, -1, 2, 1][$0 % 5], sequence: Int64($0)) }
        for row in rows { inserted.insert(row) }
        loaded.load(rows)
        #expect(ids(loaded) == ids(inserted))
    }

    @Test func jobsAlikeShareOneClassAndAClassGoesWithItsLastJob() {
        var index = JobIndex()
        index.insert(row("a", tags: ["os"], size: 1))
        index.insert(row("b", tags: ["os"], size: 2))
        index.insert(row("c", tags: ["media"]))
        #expect(index.classes.count == 2)
        #expect(index.entry("a")?.jobClass == index.entry("b")?.jobClass)
        #expect(index.entry("a")?.policySize == 1)
        #expect(index.entry("c")?.policySize == nil)
        index.remove("c")
        #expect(index.classes.count == 1)
        index.remove("a")
        #expect(index.classes.count == 1)
        index.remove("b")
        #expect(index.classes.count == 0)
        #expect(index.isEmpty && index.schedule.isEmpty)
    }

    @Test func aRemovedSlotIsUsedAgainAndLeavesTheSchedule() {
        var index = JobIndex()
        index.insert(row("a", sequence: 1))
        index.insert(row("b", sequence: 2))
        let slot = index.slot(of: "a")
        index.remove("a")
        #expect(index.entry("a") == nil)
        #expect(ids(index) == ["b"])
        index.insert(row("c", priority: 1, sequence: 3))
        #expect(index.slot(of: "c") == slot)
        #expect(ids(index) == ["c", "b"])
        #expect(index.entries.count == 2)
    }

    @Test func decisionsAreCountedAndComparedByNumber() {
        var index = JobIndex()
        let a = index.insert(row("a"))
        let b = index.insert(row("b"))
        let pause = DecisionKey(Decision(action: .pause, rule: "metered"))
        let run = DecisionKey(Decision(action: .run, allowedLinks: ["wlan0"], rule: "wifi"))
        let first = index.setDecision(a, pause)
        let again = index.setDecision(a, pause)
        let other = index.setDecision(b, pause)
        #expect(first && !again && other)
        #expect(index[a].decision == index[b].decision)
        #expect(index.decisions.count == 1)
        let changed = index.setDecision(a, run)
        #expect(changed)
        #expect(index.decisions.count == 2)
        #expect(index.decision(of: index[a]) == run)
        index.remove("b")
        #expect(index.decisions.count == 1)
        #expect(index.decisions.number(of: pause) == nil)
    }

    @Test func waitingCountFollowsLifecycles() throws {
        var index = JobIndex()
        index.insert(row("a"))
        index.insert(row("b", state: .waiting))
        index.insert(row("c", state: .paused))
        #expect(index.waitingCount == 2)
        // A live job counts as any other: the lifecycle is the entry's.
        index.modify(index.slot(of: "a")!) { $0.flags.formUnion(.live) }
        #expect(index.waitingCount == 2)
        _ = try index.modify(index.slot(of: "a")!) { try $0.lifecycle.handle(.userPause) }
        #expect(index.waitingCount == 1)
        _ = try index.modify(index.slot(of: "c")!) { try $0.lifecycle.handle(.userResume) }
        #expect(index.waitingCount == 2)
        index.remove("b")
        #expect(index.waitingCount == 1)
        #expect(index.stateCounts() == [.queued: 1, .paused: 1])
    }

    @Test func anOwnerIsKeptAndNoOwnerIsTheDaemons() {
        var index = JobIndex()
        index.insert(row("mine", owner: 1000))
        index.insert(row("old"))
        index.insert(row("root", owner: 0))
        #expect(index.entry("mine")?.owner == 1000)
        #expect(index.entry("old")?.owner == nil)
        #expect(index.entry("root")?.owner == 0)
    }
}
