import Testing

@testable import Transfer

/// How much each request of a segmented download asks for (`RequestSpan`).
struct RequestSpanTests {
    static let mib: Int64 = 1 << 20

    @Test func oneSegmentAsksForEverythingAndTheFirstAskOfASplitIsBounded() {
        let none = RequestSpan()
        #expect(none.bytes(segmented: false, lengthKnown: false, answered: false) == nil)
        #expect(none.bytes(segmented: false, lengthKnown: true, answered: true) == nil)
        #expect(none.bytes(segmented: true, lengthKnown: false, answered: false) == RequestSpan.first)
        // A server that never says the length: after its first answer, ask open-ended.
        #expect(none.bytes(segmented: true, lengthKnown: false, answered: true) == nil)
        #expect(none.bytes(segmented: true, lengthKnown: true, answered: true) == RequestSpan.first)
    }

    @Test func theFirstRequestsHeadIsNotARoundTrip() {
        var span = RequestSpan()
        // 2 MiB in 10 ms, its head after 8 ms: the connection's handshake, not the path's round trip.
        span.record(bytes: 2 * Self.mib, elapsed: .milliseconds(10), head: .milliseconds(8))
        #expect(span.roundTrip == nil)
        #expect(span.bytes(segmented: true, lengthKnown: true, answered: true) == RequestSpan.first)
        span.record(bytes: 2 * Self.mib, elapsed: .milliseconds(10), head: .microseconds(100))
        #expect(span.roundTrip == .microseconds(100))
    }

    @Test(
        arguments: [
            // bytes/s, round trip, expected span
            (200e6, Duration.microseconds(100), Int64(200e6 * 0.02)),  // loopback: the shortest span, 20 ms
            (10e6, Duration.milliseconds(5), Int64(10e6 * 0.5)),  // 100 round trips
            (10e6, Duration.milliseconds(80), Int64(10e6 * 2)),  // no longer than 2 s
            (50e3, Duration.milliseconds(80), RequestSpan.least),  // never below 256 KiB
        ] as [(Double, Duration, Int64)])
    func aSpanLastsAHundredRoundTripsWithinBounds(_ rate: Double, _ roundTrip: Duration, _ expected: Int64) {
        let span = RequestSpan(rate: rate, roundTrip: roundTrip)
        let got = span.bytes(segmented: true, lengthKnown: true, answered: true) ?? -1
        #expect(abs(got - expected) <= 1, "\(got) for \(rate) B/s over \(roundTrip)")
    }

    @Test func aRequestIsTooSlowWhenItsRestWouldTakeOverTwoSeconds() {
        // Not judged before half a second.
        #expect(!RequestSpan.isTooSlow(left: 100 << 20, done: 0, elapsed: .milliseconds(400)))
        // Nothing arrived in half a second.
        #expect(RequestSpan.isTooSlow(left: 1, done: 0, elapsed: .milliseconds(500)))
        // 1 MiB/s with 3 MiB left: 3 s; with 1 MiB left: 1 s.
        #expect(RequestSpan.isTooSlow(left: 3 * Self.mib, done: Self.mib, elapsed: .seconds(1)))
        #expect(!RequestSpan.isTooSlow(left: Self.mib, done: Self.mib, elapsed: .seconds(1)))
        #expect(!RequestSpan.isTooSlow(left: 0, done: 0, elapsed: .seconds(10)))
    }

    /// The wait for a request's first bytes is not its rate: a fast answer delayed by a busy CPU is not cut
    /// half a second after it was asked (a cut throws away what the kernel holds beyond it).
    @Test func aRequestIsJudgedOnItsBodyNotOnItsWaitForTheFirstBytes() {
        #expect(!RequestSpan.isTooSlow(left: 2 * Self.mib, asked: .milliseconds(600), body: nil))
        #expect(!RequestSpan.isTooSlow(left: 2 * Self.mib, asked: .milliseconds(1900), body: nil))
        // Nothing written for two seconds: it cannot end within them.
        #expect(RequestSpan.isTooSlow(left: 2 * Self.mib, asked: .seconds(2), body: nil))
        #expect(!RequestSpan.isTooSlow(left: 0, asked: .seconds(10), body: nil))
        // Asked long ago, first bytes just now: not judged yet, whatever the wait.
        #expect(!RequestSpan.isTooSlow(left: 2 * Self.mib, asked: .seconds(1), body: (0, .milliseconds(100))))
        // A crawl from its first bytes on: 128 KiB in a second with 2 MiB left is 16 s.
        #expect(
            RequestSpan.isTooSlow(left: 2 * Self.mib, asked: .milliseconds(1100), body: (128 << 10, .seconds(1))))
        #expect(!RequestSpan.isTooSlow(left: 2 * Self.mib, asked: .seconds(3), body: (2 * Self.mib, .seconds(1))))
    }

    @Test func outlandishFiguresNeverTrap() {
        #expect(
            RequestSpan(rate: .infinity, roundTrip: .seconds(1)).bytes(
                segmented: true, lengthKnown: true, answered: true) == RequestSpan.first)
        #expect(
            RequestSpan(rate: 1e300, roundTrip: .seconds(1)).bytes(segmented: true, lengthKnown: true, answered: true)
                == nil)
        var span = RequestSpan()
        span.record(bytes: Int64.max, elapsed: .zero, head: .zero)
        span.record(bytes: 1 << 20, elapsed: .seconds(-1), head: .zero)
        #expect(span.rate == nil)
    }
}
