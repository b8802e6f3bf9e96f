/// When the writer checkpoints and when it starts write-back; a value, fed with every write.
///
/// A checkpoint is due `every` (1 s) after the last one, or once `everyBytes` (4 MiB, the whole download's,
/// whatever its segments) were written but not sooner than `minimumGap` (100 ms) after the last one; the
/// clock starts at the first byte written, so the first checkpoint comes at 1 s or 4 MiB too. A slow
/// transfer checkpoints every second, a fast one at most ten times a second. Bytes lost to a crash stay
/// bounded by max(4 MiB, 100 ms of transfer) plus what arrives while one checkpoint is being made durable
/// (docs/checkpoint.md). Write-back of the dirty pages starts every `writebackEvery` bytes, so the
/// fdatasync before each checkpoint finds little left to write and the disk works in step with the network.
struct CheckpointCadence: Sendable {
    var everyBytes: Int64
    var every: Duration
    var minimumGap: Duration = .milliseconds(100)
    var writebackEvery: Int64 = 8 << 20

    private(set) var sinceCheckpoint: Int64 = 0
    private(set) var sinceWriteback: Int64 = 0
    /// When the last checkpoint was taken; nil before the first byte.
    private(set) var last: ContinuousClock.Instant?

    init(everyBytes: Int64, every: Duration) {
        self.everyBytes = everyBytes
        self.every = every
    }

    /// Counts `n` bytes written at `now`: whether a checkpoint is due, and whether write-back should start.
    mutating func wrote(_ n: Int, at now: ContinuousClock.Instant) -> (checkpoint: Bool, writeback: Bool) {
        sinceCheckpoint += Int64(n)
        sinceWriteback += Int64(n)
        guard let last else {
            // The first byte starts the clock of the first checkpoint.
            self.last = now
            return (everyBytes <= sinceCheckpoint, false)
        }
        let elapsed = now - last
        let byBytes = sinceCheckpoint >= everyBytes && elapsed >= minimumGap
        let checkpoint = sinceCheckpoint > 0 && (elapsed >= every || byBytes)
        var writeback = false
        if sinceWriteback >= writebackEvery {
            sinceWriteback = 0
            writeback = true
        }
        return (checkpoint, writeback)
    }

    /// A checkpoint was taken at `now`.
    mutating func checkpointed(at now: ContinuousClock.Instant) {
        sinceCheckpoint = 0
        last = now
    }
}
