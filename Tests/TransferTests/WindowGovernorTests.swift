import Testing

@testable import Transfer

/// The window a running connection may offer: enough for its rate over its lowest round trip, no more.
@Suite struct WindowGovernorTests {
    let start = ContinuousClock.now
    let turn = WindowGovernor.period

    /// Equal but for floating-point rounding.
    func near(_ a: Int, _ b: Int) -> Bool { abs(a - b) <= 2 }

    @Test func withoutARoundTripThereIsNothingToGoBy() {
        var governor = WindowGovernor(at: start)
        #expect(governor.window(read: 1 << 20, at: start + turn, minRTT: nil, connections: 1) == nil)
        #expect(governor.window(read: 1 << 20, at: start + turn, minRTT: .zero, connections: 1) == nil)
    }

    /// A near or slow path needs little: the floor, shared by the download's connections.
    @Test(arguments: [(1, 48 << 10), (4, 12 << 10), (10, 8 << 10)])
    func aShortPathGetsTheFloorSharedByTheConnections(connections: Int, expected: Int) {
        var governor = WindowGovernor(at: start)
        // 100 Mbit/s over a 50 µs round trip: 1.2 KB a round trip.
        let read: Int64 = 250_000  // 12.5 MB/s over the 20 ms turn
        #expect(
            governor.window(read: read, at: start + turn, minRTT: .microseconds(50), connections: connections)
                == expected)
    }

    /// On a long path a window that holds the rate back doubles each turn until the link is the limit; then
    /// it stays at twice the bandwidth-delay product.
    @Test func aWindowThatLimitsTheRateDoublesUntilTheLinkIsTheLimit() {
        var governor = WindowGovernor(at: start)
        let rtt = Duration.milliseconds(40)
        let link = 6_250_000.0  // 50 Mbit/s: the bandwidth-delay product is 250 kB
        var window = WindowGovernor.floor
        var read: Int64 = 0
        var now = start
        var windows: [Int] = []
        for _ in 0..<12 {
            // What a window allows over the round trip, or the link's rate if that is less.
            let rate = min(link, Double(window) / 0.040)
            read += Int64(rate * 0.020)
            now += turn
            window = governor.window(read: read, at: now, minRTT: rtt, connections: 1) ?? window
            windows.append(window)
        }
        #expect(near(windows[0], 2 * WindowGovernor.floor))
        #expect(near(windows[1], 4 * WindowGovernor.floor))
        #expect(near(windows.last!, 500_000))
    }

    /// A stall (the disk, the server) does not shut the window at once: the rate it was given decays.
    @Test func aStallDecaysTheWindowSlowly() {
        var governor = WindowGovernor(at: start)
        let rtt = Duration.milliseconds(40)
        let fast = governor.window(read: 125_000, at: start + turn, minRTT: rtt, connections: 1)
        #expect(near(fast ?? 0, 500_000))
        let stalled = governor.window(read: 125_000, at: start + turn * 2, minRTT: rtt, connections: 1)
        #expect(near(stalled ?? 0, 450_000))
    }

    /// Never fewer than four of the peer's segments: on loopback a segment is 64 KiB, and a window smaller
    /// than a few makes the sender wait on it.
    @Test func aWindowHoldsAFewSegments() {
        var governor = WindowGovernor(at: start)
        #expect(
            governor.window(read: 1 << 20, at: start + turn, minRTT: .microseconds(10), segment: 65_483, connections: 4)
                == 4 * 65_483)
        var veth = WindowGovernor(at: start)
        #expect(
            veth.window(read: 1 << 20, at: start + turn, minRTT: .microseconds(10), segment: 1448, connections: 4)
                == 12 << 10)
    }

    @Test func countsGoingBackwardsOrNoTimeAreIgnored() {
        var governor = WindowGovernor(read: 1000, at: start)
        #expect(governor.window(read: 10, at: start + turn, minRTT: .milliseconds(1), connections: 1) == nil)
        #expect(governor.window(read: 2000, at: start, minRTT: .milliseconds(1), connections: 1) == nil)
    }

    @Test func aHugeProductStopsAtTheCeiling() {
        var governor = WindowGovernor(at: start)
        #expect(
            governor.window(read: .max / 2, at: start + turn, minRTT: .seconds(10), connections: 1)
                == WindowGovernor.ceiling)
    }
}
