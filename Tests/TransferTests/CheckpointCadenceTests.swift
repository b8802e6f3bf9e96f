import Testing

@testable import Transfer

/// When the writer checkpoints and starts write-back (pure: instants are given). The bound a kill can lose
/// is 1 s or 4 MiB, whichever comes first, from the very first byte (docs/checkpoint.md).
struct CheckpointCadenceTests {
    let start = ContinuousClock.now

    func cadence() -> CheckpointCadence { CheckpointCadence(everyBytes: 4 << 20, every: .seconds(1)) }

    @Test func aSlowTransferCheckpointsEverySecondCountedFromItsFirstByte() {
        var c = cadence()
        // Nothing written for 5 s (connecting, a slow first answer): the clock has not started.
        #expect(!c.wrote(1024, at: start + .seconds(5)).checkpoint)
        for tick in 1...9 {
            #expect(!c.wrote(1024, at: start + .seconds(5) + .milliseconds(100 * tick)).checkpoint, "tick \(tick)")
        }
        #expect(c.wrote(1024, at: start + .seconds(6)).checkpoint)
        c.checkpointed(at: start + .seconds(6))
        #expect(!c.wrote(1024, at: start + .milliseconds(6500)).checkpoint)
    }

    @Test func theFirstCheckpointComesAtFourMiBWhateverTheSegments() {
        var c = cadence()
        #expect(!c.wrote(1 << 20, at: start).checkpoint)
        #expect(!c.wrote(2 << 20, at: start + .milliseconds(150)).checkpoint)
        #expect(c.wrote(1 << 20, at: start + .milliseconds(200)).checkpoint)
    }

    @Test func aFastTransferWaitsForTheMinimumGap() {
        var c = cadence()
        _ = c.wrote(1, at: start)
        c.checkpointed(at: start)
        // 64 MiB within 100 ms: the byte threshold is long passed, but not the gap.
        for step in 1...64 {
            #expect(!c.wrote(1 << 20, at: start + .microseconds(1500 * step)).checkpoint)
        }
        #expect(c.wrote(1 << 20, at: start + c.minimumGap).checkpoint)
    }

    @Test func nothingWrittenNothingDue() {
        var c = cadence()
        #expect(!c.wrote(0, at: start + .seconds(5)).checkpoint)
        #expect(!c.wrote(0, at: start + .seconds(7)).checkpoint)
    }

    @Test func writeBackStartsEveryEightMiB() {
        var c = cadence()
        var starts = 0
        for step in 0..<40 where c.wrote(1 << 20, at: start + .microseconds(step)).writeback { starts += 1 }
        #expect(starts == 40 / 8)
    }

    @Test func aHugeIntervalDoesNotOverflow() {
        var c = CheckpointCadence(everyBytes: .max / 2, every: .seconds(1))
        #expect(!c.wrote(1 << 20, at: start).checkpoint)
        #expect(!c.wrote(1 << 20, at: start + .milliseconds(500)).checkpoint)
        #expect(c.wrote(1 << 20, at: start + .seconds(1)).checkpoint)
    }
}
