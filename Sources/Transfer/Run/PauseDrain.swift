/// How long a pausing transfer reads on before it closes its connections (pure; `DownloadRun.attempt`
/// carries it out, `ConnectionTap` measures).
///
/// At the pause the kernels hold bytes nobody read yet (megabytes when the disk is slower than the
/// network). The segments read on until NIO has read as much as the kernels had received at that moment
/// (`target`) and nothing reached them for `quiet` (what NIO buffered is written too), or for `longest`
/// at most. It does not wait for bytes still in flight: those would keep the sender going.
struct PauseDrain: Sendable {
    static let quiet: Duration = .milliseconds(1)
    static let longest: Duration = .milliseconds(50)
    static let poll: Duration = .microseconds(500)

    let started: ContinuousClock.Instant
    /// The bytes NIO must have read: what it had read plus what the kernels held unread at the pause.
    let target: Int64

    init(started: ContinuousClock.Instant, target: Int64) {
        self.started = started
        self.target = target
    }

    /// Whether to close at `now`, NIO having read `read` bytes in all and the last body bytes having
    /// reached the segments at `lastReceive`.
    func isOver(now: ContinuousClock.Instant, read: Int64, lastReceive: ContinuousClock.Instant) -> Bool {
        now - started >= Self.longest || (read >= target && now - max(lastReceive, started) >= Self.quiet)
    }
}
