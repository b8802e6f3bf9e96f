/// When the writer checkpoints and when it starts write-back; a value, fed with every write.
///
/// A checkpoint is due `every` (1 s) after the last one, or once `everyBytes` per segment were written
/// but not sooner than `minimumGap` after the last one: a slow transfer checkpoints every second, a fast
/// one a few times a second rather than once per 4 MiB (at 1 GB/s that was 60 fsyncs a second). Bytes
/// lost to a crash stay bounded by max(one interval of bytes, `minimumGap` of transfer). Write-back of the
/// dirty pages starts every `writebackEvery` bytes, so the fdatasync before each checkpoint finds little
/// left to write and the disk works in step with the network.
struct CheckpointCadence: Sendable {
    var everyBytes: Int64
    var every: Duration
    var minimumGap: Duration = .milliseconds(250)
    var writebackEvery: Int64 = 8 << 20
    var segments = 1

    private(set) var sinceCheckpoint: Int64 = 0
    private(set) var sinceWriteback: Int64 = 0
    private(set) var last: ContinuousClock.Instant

    init(everyBytes: Int64, every: Duration, start: ContinuousClock.Instant) {
        self.everyBytes = everyBytes
        self.every = every
        self.last = start
    }

    /// Counts `n` bytes written at `now`: whether a checkpoint is due, and whether write-back should start.
    mutating func wrote(_ n: Int, at now: ContinuousClock.Instant) -> (checkpoint: Bool, writeback: Bool) {
        sinceCheckpoint += Int64(n)
        sinceWriteback += Int64(n)
        let elapsed = now - last
        let threshold = everyBytes.multipliedReportingOverflow(by: Int64(max(1, segments)))
        let byBytes = !threshold.overflow && sinceCheckpoint >= threshold.partialValue && elapsed >= minimumGap
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
