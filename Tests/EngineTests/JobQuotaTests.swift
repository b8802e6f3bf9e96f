import MeterwiseClient
import Testing

@testable import Engine

/// A user's unfinished jobs are bounded (`daemon --max-queued-per-user`); root and the daemon's own user
/// are not; the index counts each owner's unfinished jobs as they come and go.
@Suite struct JobQuotaTests {
    @Test(arguments: [
        (Int?.some(2), UInt32(65534), 0, true),
        (Int?.some(2), UInt32(65534), 1, true),
        (Int?.some(2), UInt32(65534), 2, false),
        (Int?.some(2), UInt32(65534), 5000, false),
        (Int?.some(2), UInt32(0), 5000, true),  // root is not limited
        (Int?.none, UInt32(65534), 1_000_000, true),  // no limit
        (Int?.some(0), UInt32(1000), 0, false),
    ])
    func refusesAtTheLimit(perUser: Int?, uid: UInt32, unfinished: Int, allowed: Bool) {
        let refusal = JobQuota(perUser: perUser).refusal(asker: Asker(uid: uid, gid: uid), unfinished: unfinished)
        #expect((refusal == nil) == allowed)
        if let refusal, let perUser {
            #expect(
                refusal.contains("limit per user (\(perUser))") && refusal.contains("--max-queued-per-user"),
                "\(refusal)")
        }
    }

    @Test func theIndexCountsEachOwnersUnfinishedJobs() {
        var index = JobIndex()
        func row(_ id: String, owner: UInt32?) -> JobIndex.Row {
            JobIndex.Row(
                JobRecord(id: id, url: "http://127.0.0.1:9/\(id)", destination: "/tmp/\(id)", ownerUID: owner),
                sequence: 0)
        }
        index.insert(row("a", owner: 1000))
        index.insert(row("b", owner: 1000))
        index.insert(row("c", owner: 2000))
        index.insert(row("d", owner: nil))
        #expect(index.unfinished(of: 1000) == 2 && index.unfinished(of: 2000) == 1)
        index.insert(row("a", owner: 1000))  // indexed again (resumed): still one job
        #expect(index.unfinished(of: 1000) == 2)
        index.remove("a")
        index.remove("a")
        #expect(index.unfinished(of: 1000) == 1)
        index.remove("b")
        index.remove("c")
        #expect(index.unfinished(of: 1000) == 0 && index.unfinished(of: 2000) == 0)
    }
}
