import Testing

@testable import Transfer

/// Background mode's window (receiver-side LEDBAT): the queuing delay it sees decides the window all of a
/// download's connections share.
@Suite struct BackgroundWindowTests {
    let start = ContinuousClock.now
    let turn = WindowGovernor.period
    let segment = 1448
    var least: Int { ConnectionTap.backgroundFloor(segment: segment) }

    /// A controller past its first sample, at `base` with no queue.
    func started(base: Duration = .milliseconds(20)) -> (BackgroundWindow, ContinuousClock.Instant) {
        var w = BackgroundWindow(at: start, segment: segment)
        let now = start + turn
        _ = w.update(roundTrip: base, delivered: 0, segment: segment, floor: least, at: now)
        return (w, now)
    }

    @Test func withoutASampleThereIsNothingToGoBy() {
        var w = BackgroundWindow(at: start, segment: segment)
        #expect(w.update(roundTrip: nil, delivered: 1 << 20, segment: segment, floor: least, at: start + turn) == nil)
        #expect(w.base == nil && w.queuingDelay == nil)
    }

    /// Under three quarters of the target, a window the sender fills doubles in a turn, no faster.
    @Test func slowStartDoublesAWindowInUse() {
        var (w, now) = started()
        let before = w.window
        now += turn
        let after = w.update(
            roundTrip: .milliseconds(21), delivered: Int64(before), segment: segment, floor: least, at: now)
        #expect(after == 2 * before)
        #expect(w.phase == .slowStart)
    }

    /// A window nobody fills (the server or the disk is the limit) does not grow.
    @Test func anUnusedWindowDoesNotGrow() {
        var (w, now) = started()
        let before = w.window
        now += turn
        #expect(
            w.update(roundTrip: .milliseconds(20), delivered: 100, segment: segment, floor: least, at: now) == before)
    }

    /// Over the target the window shrinks at once, in proportion to how far over, at most by half, never
    /// below the floor; and slow start is over.
    @Test func overTheTargetTheWindowShrinksAtOnce() throws {
        var (w, now) = started(base: .milliseconds(200))
        for _ in 0..<4 {
            now += turn
            _ = w.update(roundTrip: .milliseconds(201), delivered: 1 << 20, segment: segment, floor: least, at: now)
        }
        let before = w.window
        now += turn
        // 6 ms of queue over a 5 ms target: 20 % over, so 80 % of the window.
        let after =
            (w.update(roundTrip: .milliseconds(206), delivered: 1 << 20, segment: segment, floor: least, at: now) ?? -1)
        #expect(abs(after - before * 8 / 10) <= 1)
        #expect(w.phase == .steady)
        // Far over, a round trip later: half.
        now += .milliseconds(300)
        let halved =
            (w.update(roundTrip: .milliseconds(260), delivered: 1 << 20, segment: segment, floor: least, at: now) ?? -1)
        #expect(abs(halved - after / 2) <= 1)
        for _ in 0..<20 {
            now += .milliseconds(300)
            _ = w.update(roundTrip: .milliseconds(260), delivered: 1 << 20, segment: segment, floor: least, at: now)
        }
        #expect(w.window == least)
    }

    /// One decrease a round trip: the queue the last decrease left has not drained in less.
    @Test func oneDecreaseARoundTrip() throws {
        var (w, now) = started(base: .milliseconds(100))
        now += turn
        _ = w.update(roundTrip: .milliseconds(101), delivered: 1 << 20, segment: segment, floor: least, at: now)
        now += turn
        let first =
            (w.update(roundTrip: .milliseconds(120), delivered: 1 << 20, segment: segment, floor: least, at: now) ?? -1)
        now += turn  // 20 ms later, well within the 120 ms round trip
        let second = w.update(
            roundTrip: .milliseconds(120), delivered: 1 << 20, segment: segment, floor: least, at: now)
        #expect(second == first)
    }

    /// Under the target after slow start, the window grows by LEDBAT++'s gain of a segment per round trip.
    @Test func steadyGrowthIsAFractionOfASegmentPerRoundTrip() throws {
        var (w, now) = started(base: .milliseconds(20))
        now += .milliseconds(40)
        _ = w.update(roundTrip: .milliseconds(26), delivered: 1 << 20, segment: segment, floor: least, at: now)
        #expect(w.phase == .steady)
        let before = w.window
        now += .milliseconds(40)  // two round trips of 20 ms; gain 1 / ⌈2 × 5 / 20⌉ = 1
        let after =
            (w.update(roundTrip: .milliseconds(20), delivered: 1 << 20, segment: segment, floor: least, at: now) ?? -1)
        #expect(after == before + 2 * segment)
    }

    /// The base is the lowest round trip of the history, or what the kernels measured on our own segments
    /// when that is lower (microseconds, where receiver samples come in 1 ms steps).
    @Test func theBaseIsTheLowestOfTheHistoryAndThePath() {
        var (w, now) = started(base: .milliseconds(30))
        now += turn
        _ = w.update(roundTrip: .milliseconds(35), delivered: 0, segment: segment, floor: least, at: now)
        #expect(w.base == .milliseconds(30))
        #expect(w.queuingDelay == .milliseconds(5))
        now += turn
        _ = w.update(
            roundTrip: .milliseconds(35), pathMinimum: .microseconds(400), delivered: 0, segment: segment,
            floor: least, at: now)
        #expect(w.base == .microseconds(400))
    }

    /// A base older than the history (10 buckets of 30 s) is forgotten: a route that got longer is not a
    /// queue for ever.
    @Test func anOldBaseIsForgotten() {
        var (w, now) = started(base: .milliseconds(10))
        for _ in 0..<11 {
            now += .seconds(31)
            _ = w.update(roundTrip: .milliseconds(50), delivered: 0, segment: segment, floor: least, at: now)
        }
        #expect(w.base == .milliseconds(50))
    }

    /// No new sample for a while (the kernel takes none under its 1 ms step, so an empty queue on a short
    /// path sends none): the queuing delay is taken to halve each turn, and the window may grow again.
    @Test func aStaleDelayFades() throws {
        var (w, now) = started(base: .microseconds(50))
        now += turn
        _ = w.update(roundTrip: .milliseconds(17), delivered: 0, segment: segment, floor: least, at: now)
        let high = try #require(w.queuingDelay)
        now += BackgroundWindow.staleAfter
        _ = w.update(roundTrip: nil, delivered: 0, segment: segment, floor: least, at: now)
        let faded = try #require(w.queuingDelay)
        #expect(faded < high * 0.6 && faded > high * 0.4)
        for _ in 0..<10 {
            now += turn
            _ = w.update(roundTrip: nil, delivered: 0, segment: segment, floor: least, at: now)
        }
        #expect(try #require(w.queuingDelay) < .milliseconds(1))
    }

    /// LEDBAT++'s slowdown: soon after slow start, the window drops to the floor for two round trips (40 ms
    /// at least) and then comes back to what it was; the next one comes nine lengths later, 2 s at least.
    @Test func theSlowdownDrainsTheQueueAndComesBack() throws {
        var (w, now) = started(base: .milliseconds(2))
        for _ in 0..<3 {
            now += turn
            _ = w.update(roundTrip: .milliseconds(3), delivered: 1 << 20, segment: segment, floor: least, at: now)
        }
        now += turn
        _ = w.update(roundTrip: .milliseconds(8), delivered: 1 << 20, segment: segment, floor: least, at: now)
        #expect(w.phase == .steady)
        var sawSlowdown = false
        var restored = 0
        for _ in 0..<10 {
            let before = w.window
            now += turn
            let window =
                (w.update(roundTrip: .milliseconds(6), delivered: 1 << 20, segment: segment, floor: least, at: now)
                    ?? -1)
            if w.phase == .slowdown {
                sawSlowdown = true
                restored = max(restored, before)
                #expect(window == least)
            } else if sawSlowdown {
                #expect(window >= restored)
                break
            }
        }
        #expect(sawSlowdown)
        // Not again within the gap.
        for _ in 0..<50 {
            now += turn
            _ = w.update(roundTrip: .milliseconds(6), delivered: 1 << 20, segment: segment, floor: least, at: now)
            #expect(w.phase != .slowdown)
        }
    }

    /// At the floor with another flow's queue (twice the target or more), the download steps aside: no new
    /// request for 100 ms, doubling while the queue stays, up to a second.
    @Test func atTheFloorUnderAnotherFlowsQueueItStepsAside() {
        var (w, now) = started(base: .milliseconds(1))
        var holds: [Duration] = []
        var holdStart: ContinuousClock.Instant?
        for _ in 0..<300 {
            now += turn
            _ = w.update(roundTrip: .milliseconds(40), delivered: 3000, segment: segment, floor: least, at: now)
            if w.isHolding(at: now) {
                if holdStart == nil { holdStart = now }
            } else if let began = holdStart {
                holds.append(now - began)
                holdStart = nil
            }
        }
        #expect(holds.count >= 3)
        #expect(holds.first.map { $0 >= .milliseconds(80) && $0 <= .milliseconds(140) } ?? false)
        #expect(holds.dropFirst().first.map { $0 > holds[0] } ?? false)
        #expect(holds.allSatisfy { $0 <= .milliseconds(1040) })
        // Its own small queue (under twice the target) is not a reason to step aside.
        var (calm, t) = started(base: .milliseconds(1))
        for _ in 0..<100 {
            t += turn
            _ = calm.update(roundTrip: .milliseconds(8), delivered: 3000, segment: segment, floor: least, at: t)
            #expect(!calm.isHolding(at: t))
        }
    }

    @Test func aWindowIsSharedByAsManyConnectionsAsItHoldsFloors() {
        #expect(BackgroundWindow.connections(for: 2 * least - 1, least: least, open: 4) == 1)
        #expect(BackgroundWindow.connections(for: 3 * least, least: least, open: 4) == 3)
        #expect(BackgroundWindow.connections(for: 100 * least, least: least, open: 4) == 4)
        #expect(BackgroundWindow.connections(for: 0, least: least, open: 4) == 1)
        #expect(BackgroundWindow.connections(for: 1 << 20, least: 0, open: 2) == 2)
    }

    /// Numbers from the kernel are taken as they come: huge round trips and counts never trap.
    @Test func extremeInputsDoNotTrap() {
        var w = BackgroundWindow(at: start, segment: Int.max)
        var now = start
        for rtt in [Duration.microseconds(1), .seconds(4000), .microseconds(Int64(UInt32.max))] {
            now += turn
            _ = w.update(roundTrip: rtt, delivered: .max, segment: .max, floor: .max, at: now)
            now += turn
            _ = w.update(roundTrip: rtt, delivered: -5, segment: -1, floor: -1, at: now)
        }
        #expect(w.window <= BackgroundWindow.ceiling && w.window >= 0)
    }
}

/// How many segments may have a request out.
@Suite struct RequestGateTests {
    @Test func theLimitHoldsAndLifts() async throws {
        let gate = RequestGate()
        gate.setAllowed(1)
        #expect(try await gate.enter(unless: { false }))
        let second = Task { try await gate.enter(unless: { false }) }
        try await Task.sleep(for: .milliseconds(50))
        gate.leave()
        #expect(try await second.value)
        gate.setAllowed(0)
        gate.leave()
        let waiting = Task { try await gate.enter(unless: { false }) }
        try await Task.sleep(for: .milliseconds(50))
        gate.setAllowed(nil)
        #expect(try await waiting.value)
    }

    @Test func aStopEndsTheWait() async throws {
        let gate = RequestGate()
        gate.setAllowed(0)
        #expect(try await gate.enter(unless: { true }) == false)
    }
}
