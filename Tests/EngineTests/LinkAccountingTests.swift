import Foundation
import Links
import Policy
import TestSupport
import Testing

@testable import Engine

@Suite struct LinkAccountingTests {
    @Test func bytesFollowTheConnectionsLinkNotTheNewPrimary() {
        let accounting = LinkAccounting()
        accounting.apply(TestSnapshots.radios(up: ["wlan0", "wwan0"], primary: "wlan0"))
        accounting.route(job: "a", link: "wlan0", budgetKey: nil)
        accounting.record(job: "a", bytes: 1000)
        // The primary moves to cellular: a connection opened on wlan0 still receives on wlan0.
        accounting.apply(TestSnapshots.radios(up: ["wlan0", "wwan0"], primary: "wwan0"))
        accounting.record(job: "a", bytes: 500)
        #expect(accounting.bytesByLink == ["wlan0": 1500])
        #expect(accounting.bytesByKind == ["wlan": 1500])
        // A job with no route yet counts for the primary.
        accounting.record(job: "b", bytes: 7)
        #expect(accounting.bytesByLink["wwan0"] == 7)
    }

    @Test func reportsTheByteThatUsesUpABudget() {
        let accounting = LinkAccounting()
        accounting.route(job: "a", link: "wwan0", budgetKey: "cell@0", budgetLimit: 1000)
        #expect(accounting.record(job: "a", bytes: 999) == false)
        #expect(accounting.record(job: "a", bytes: 1) == true)
        #expect(accounting.record(job: "a", bytes: 1) == false, "reported once, at the crossing")
        #expect(accounting.usage.used("cell@0") == 1001)
    }

    /// A counter the test sets: what the kernel would say the link received.
    final class FakeCounter: @unchecked Sendable {
        var value: Int64? = 0
        var counter: ReceivedBytesCounter { ReceivedBytesCounter(wholeMachine: false) { [self] _ in value } }
    }

    /// `POST /v1/usage` is taken on no one's word: a report counts only what the link received that
    /// neither the daemon's own transfers nor an earlier report counted.
    @Test func reportsCountNoMoreThanTheLinkReceived() {
        let accounting = LinkAccounting()
        accounting.apply(TestSnapshots.radios(up: ["wwan0"], primary: "wwan0"))
        let fake = FakeCounter()
        let t0 = Date(timeIntervalSince1970: 1_000_000)
        fake.value = 10_000
        accounting.look(counter: fake.counter, at: t0)
        // A 2^40 claim with 0 bytes received since: nothing counted.
        #expect(accounting.recordExternal(bytes: 1 << 40, budgetKey: "cell@0", counter: fake.counter, at: t0) == 0)
        // The link received 5 000 bytes, 2 000 of them the daemon's own job's: 3 000 may be claimed.
        accounting.route(job: "own", link: "wwan0", budgetKey: nil)
        accounting.record(job: "own", bytes: 2_000)
        fake.value = 15_000
        #expect(
            accounting.recordExternal(bytes: 1 << 40, budgetKey: "cell@0", counter: fake.counter, at: t0 + 2) == 3_000)
        #expect(accounting.usage.used("cell@0") == 3_000)
        // Already claimed: a second report gets nothing more.
        #expect(accounting.recordExternal(bytes: 100, budgetKey: "cell@0", counter: fake.counter, at: t0 + 3) == 0)
        // An honest report takes only what it says.
        fake.value = 16_000
        #expect(accounting.recordExternal(bytes: 400, budgetKey: "cell@0", counter: fake.counter, at: t0 + 4) == 400)
        #expect(accounting.recordExternal(bytes: 1_000, budgetKey: "cell@0", counter: fake.counter, at: t0 + 5) == 600)
        // Bytes nobody claimed expire after the horizon.
        fake.value = 20_000
        #expect(accounting.recordExternal(bytes: 0, budgetKey: nil, counter: fake.counter, at: t0 + 6) == 0)
        #expect(accounting.recordExternal(bytes: 1 << 40, budgetKey: nil, counter: fake.counter, at: t0 + 100) == 0)
        // Over a gap of 15 minutes, 900 000 bytes: taken as spread evenly, only the last minute's 60 000 count.
        fake.value = 920_000
        #expect(
            accounting.recordExternal(bytes: 1 << 40, budgetKey: nil, counter: fake.counter, at: t0 + 1000) == 60_000)
        // A counter that went back (the interface was re-created) or cannot be read counts nothing.
        fake.value = 5
        #expect(accounting.recordExternal(bytes: 1 << 40, budgetKey: nil, counter: fake.counter, at: t0 + 1001) == 0)
        fake.value = nil
        #expect(accounting.recordExternal(bytes: 1 << 40, budgetKey: nil, counter: fake.counter, at: t0 + 1002) == 0)
        #expect(accounting.usage.used("cell@0") == 4_000)
    }

    /// Saved counters saturate: a store already at the top stays there instead of trapping.
    @Test func savedCountersSaturate() {
        let accounting = LinkAccounting(
            usage: Usage(bytes: ["cell@0": .max - 1]), linkBytes: ["wwan0": (kind: "wwan", bytes: .max - 1)])
        accounting.apply(TestSnapshots.radios(up: ["wwan0"], primary: "wwan0"))
        accounting.route(job: "a", link: "wwan0", budgetKey: "cell@0", budgetLimit: 10)
        accounting.record(job: "a", bytes: 1 << 30)
        let fake = FakeCounter()
        fake.value = 0
        let t0 = Date(timeIntervalSince1970: 1_000_000)
        accounting.look(counter: fake.counter, at: t0)
        fake.value = .max
        accounting.recordExternal(bytes: .max, budgetKey: "cell@0", counter: fake.counter, at: t0 + 1)
        #expect(accounting.usage.used("cell@0") == .max)
        #expect(accounting.bytesByLink["wwan0"] == .max)
        #expect(accounting.bytesByKind["wwan"] == .max)
    }

    /// Claimed bytes are not taken for the daemon's own: two honest reports in a row each count what
    /// they moved (a claim used to be subtracted again at the next look).
    @Test func aClaimIsNotSubtractedTwice() {
        let accounting = LinkAccounting()
        accounting.apply(TestSnapshots.radios(up: ["wwan0"], primary: "wwan0"))
        let fake = FakeCounter()
        let t0 = Date(timeIntervalSince1970: 1_000_000)
        accounting.look(counter: fake.counter, at: t0)
        for step in 1...5 {
            fake.value = Int64(step) * 1_000_000
            let counted = accounting.recordExternal(
                bytes: 1_000_000, budgetKey: "cell@0", counter: fake.counter, at: t0 + Double(2 * step))
            #expect(counted == 1_000_000, "report \(step)")
        }
    }

    /// The kernel counts the daemon's bytes before the daemon reads them: a report in between may take
    /// them, but once the daemon has read them the excess is taken back out of what later reports may
    /// claim, so over time reports count no more than the link received less the daemon's own bytes,
    /// plus what was in flight at one instant.
    @Test func bytesInFlightAreClaimedAtMostOnce() {
        let accounting = LinkAccounting()
        accounting.apply(TestSnapshots.radios(up: ["wwan0"], primary: "wwan0"))
        accounting.route(job: "own", link: "wwan0", budgetKey: nil)
        let fake = FakeCounter()
        let t0 = Date(timeIntervalSince1970: 1_000_000)
        accounting.look(counter: fake.counter, at: t0)
        var claimed: Int64 = 0
        var own: Int64 = 0
        var received: Int64 = 0
        // Each second the daemon's job receives 100 000 bytes, in the kernel before the daemon reads them;
        // nobody else moves a byte. A spammer reports in between every time.
        for step in 1...20 {
            received += 100_000
            fake.value = received
            claimed += accounting.recordExternal(
                bytes: 1 << 40, budgetKey: nil, counter: fake.counter, at: t0 + Double(step))
            accounting.record(job: "own", bytes: 100_000)
            own += 100_000
        }
        fake.value = received
        claimed += accounting.recordExternal(bytes: 1 << 40, budgetKey: nil, counter: fake.counter, at: t0 + 21)
        #expect(claimed + own <= received + 100_000, "claimed \(claimed), own \(own), received \(received)")
    }

    /// A reading overtaken by a later one (two reports racing) is not applied after it: no new baseline
    /// from the older, smaller count, so nothing is counted twice.
    @Test func anOvertakenReadingIsNotApplied() {
        var pool = UnclaimedBytes()
        let t0 = Date(timeIntervalSince1970: 1_000_000)
        _ = pool.claim(0, link: "wwan0", counter: 1_000, own: 0, at: t0, sequence: 1)
        #expect(pool.claim(1 << 40, link: "wwan0", counter: 5_000, own: 0, at: t0 + 1, sequence: 3) == 4_000)
        #expect(pool.claim(1 << 40, link: "wwan0", counter: 3_000, own: 0, at: t0 + 1, sequence: 2) == 0)
        #expect(pool.claim(1 << 40, link: "wwan0", counter: 6_000, own: 0, at: t0 + 2, sequence: 4) == 1_000)
    }
}
