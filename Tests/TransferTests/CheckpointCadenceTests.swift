import Testing

@testable import Transfer

/// When the writer checkpoints and starts write-back (pure: instants are given).
struct CheckpointCadenceTests {
    let start = ContinuousClock.now

    func cadence(segments: Int = 1) -> CheckpointCadence {
        var c = CheckpointCadence(everyBytes: 4 << 20, every: .seconds(1), start: start)
        c.segments = segments
        return c
    }

    @Test func aSlowTransferCheckpointsEverySecond() {
        var c = cadence()
        for tick in 1...9 {
            #expect(!c.wrote(1024, at: start + .milliseconds(100 * tick)).checkpoint, "tick \(tick)")
        }
        #expect(c.wrote(1024, at: start + .seconds(1)).checkpoint)
        c.checkpointed(at: start + .seconds(1))
        #expect(!c.wrote(1024, at: start + .milliseconds(1500)).checkpoint)
    }

    @Test func aFastTransferWaitsForTheMinimumGap() {
        var c = cadence()
        // 64 MiB within 100 ms: the byte threshold is long passed, but not the gap.
        for step in 1...64 {
            #expect(!c.wrote(1 << 20, at: start + .microseconds(1500 * step)).checkpoint)
        }
        #expect(c.wrote(1 << 20, at: start + c.minimumGap).checkpoint)
    }

    @Test func theByteThresholdScalesWithSegments() {
        var one = cadence(segments: 1)
        var four = cadence(segments: 4)
        let at = start + .milliseconds(300)
        #expect(one.wrote(4 << 20, at: at).checkpoint)
        #expect(!four.wrote(4 << 20, at: at).checkpoint)
        #expect(!four.wrote(8 << 20, at: at).checkpoint)
        #expect(four.wrote(4 << 20, at: at).checkpoint)
    }

    @Test func nothingWrittenNothingDue() {
        var c = cadence()
        #expect(!c.wrote(0, at: start + .seconds(5)).checkpoint)
    }

    @Test func writeBackStartsEveryEightMiB() {
        var c = cadence()
        var starts = 0
        for step in 0..<40 where c.wrote(1 << 20, at: start + .microseconds(step)).writeback { starts += 1 }
        #expect(starts == 40 / 8)
    }

    @Test func aHugeIntervalDoesNotOverflow() {
        var c = CheckpointCadence(everyBytes: .max / 2, every: .seconds(1), start: start)
        c.segments = 64
        #expect(!c.wrote(1 << 20, at: start + .milliseconds(500)).checkpoint)
        #expect(c.wrote(1 << 20, at: start + .seconds(1)).checkpoint)
    }
}
