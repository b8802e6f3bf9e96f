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
        func cut(_ asked: Duration, _ body: RequestSpan.Body?, slowest: Duration = .zero) -> Int64? {
            RequestSpan.cut(
                left: 2 * Self.mib, remaining: 6 * Self.mib, asked: asked, body: body, slowestFirstBytes: slowest)
        }
        #expect(cut(.milliseconds(600), nil) == nil)
        #expect(cut(.milliseconds(1900), nil) == nil)
        // Nothing written for two seconds: too slow, and it keeps half its range, so whoever takes the rest asks
        // from another byte (a server slow on one request's start made two segments hand it back and forth).
        #expect(cut(.seconds(2), nil) == 3 * Self.mib)
        // ...unless requests of this download wait that long for their first bytes anyway.
        #expect(cut(.seconds(3), nil, slowest: .milliseconds(2500)) == nil)
        #expect(cut(.seconds(5), nil, slowest: .milliseconds(2500)) == 3 * Self.mib)
        // Not into halves under 256 KiB: a request each for little.
        #expect(
            RequestSpan.cut(
                left: 400 << 10, remaining: 400 << 10, asked: .seconds(3), body: nil, slowestFirstBytes: .zero)
                == nil)
        #expect(
            RequestSpan.cut(left: 0, remaining: 6 * Self.mib, asked: .seconds(10), body: nil, slowestFirstBytes: .zero)
                == nil)
        // First bytes just now: not judged yet, whatever the wait.
        #expect(cut(.seconds(1), .init(done: 0, elapsed: .milliseconds(100), quiet: .milliseconds(100))) == nil)
        // Only its first bytes after a second: no rate yet...
        #expect(cut(.seconds(1), .init(done: 0, elapsed: .seconds(1), quiet: .seconds(1))) == nil)
        // ...and nothing more for two seconds is a stall: it keeps nothing.
        #expect(cut(.seconds(3), .init(done: 512 << 10, elapsed: .seconds(3), quiet: .seconds(2))) == 0)
        // A crawl from its first bytes on: 128 KiB in a second with 2 MiB left is 16 s; it keeps half a second's.
        #expect(cut(.milliseconds(1100), .init(done: 128 << 10, elapsed: .seconds(1), quiet: .zero)) == 64 << 10)
        #expect(cut(.seconds(3), .init(done: 2 * Self.mib, elapsed: .seconds(1), quiet: .zero)) == nil)
    }

    /// After a freeze of the whole process (SIGSTOP, a suspended machine) every request's window looks slow while
    /// the kernel holds what came meanwhile: with nothing received by any request for a quarter second, no rate is
    /// judged (a helper saw 250–500 KB thrown away in 3 of 80 runs frozen for 0.45–1 s); a stall still is.
    @Test func noRateIsJudgedWhileTheWholeDownloadIsHeldUp() {
        let crawl = RequestSpan.Body(done: 128 << 10, elapsed: .seconds(1), quiet: .milliseconds(900))
        func cut(_ body: RequestSpan.Body, since: Duration) -> Int64? {
            RequestSpan.cut(
                left: 2 * Self.mib, remaining: 6 * Self.mib, asked: .seconds(2), body: body, slowestFirstBytes: .zero,
                sinceAnyBytes: since)
        }
        #expect(cut(crawl, since: .milliseconds(100)) == 64 << 10)
        #expect(cut(crawl, since: .milliseconds(900)) == nil)
        let stalled = RequestSpan.Body(done: 128 << 10, elapsed: .seconds(3), quiet: .seconds(2))
        #expect(cut(stalled, since: .seconds(2)) == 0)
    }

    /// A request's rate is judged from its first bytes, then over its last half second to second: a megabyte at
    /// once and then 256 KiB/s shows the crawl a second in (its whole body's average hid it to the end).
    @Test func aRequestsRateIsJudgedOverItsLastHalfSecondToSecond() throws {
        let t0 = ContinuousClock.now
        var start = DownloadBoard.RequestStart(at: t0)
        #expect(start.window == nil)
        // The first write's bytes are not counted: the window starts where it started.
        start.wrote(from: 0, to: 64 << 10, at: t0 + .milliseconds(10))
        #expect(start.window?.next == 0)
        // The burst: a megabyte within 20 ms, then 256 KiB/s, a write every 50 ms.
        start.wrote(from: 64 << 10, to: Self.mib, at: t0 + .milliseconds(30))
        var position = Self.mib
        var now = t0 + .milliseconds(30)
        while now < t0 + .milliseconds(1030) {
            now += .milliseconds(50)
            position += 256 << 10 / 20
            start.wrote(from: position - (256 << 10 / 20), to: position, at: now)
        }
        let window = try #require(start.window)
        let elapsed = now - window.at
        #expect(elapsed >= RequestSpan.judged && elapsed < .seconds(1), "\(elapsed)")
        let rate = Double(position - window.next) / elapsed.secondsDouble
        #expect(abs(rate - Double(256 << 10)) < Double(32 << 10), "\(rate)")
        // Judged on that window, the rest of a 2 MiB request is too slow to wait for.
        let body = RequestSpan.Body(done: position - window.next, elapsed: elapsed, quiet: .zero)
        let kept = RequestSpan.cut(
            left: 2 * Self.mib - position, remaining: 2 * Self.mib - position, asked: now - t0, body: body,
            slowestFirstBytes: .zero)
        #expect(kept != nil && kept! < 256 << 10, "\(String(describing: kept))")
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
