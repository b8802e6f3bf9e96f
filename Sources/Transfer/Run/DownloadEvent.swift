/// Something that happened during a download; read them from `Download.events`.
public enum DownloadEvent: Sendable {
    /// The object is known: its length (nil when the server did not say) and how much was already on disk.
    case started(totalBytes: Int64?, resumedBytes: Int64, segments: Int)
    /// Periodic progress (every 100 ms while bytes flow).
    case progress(DownloadProgress)
    /// The partial data was discarded and the download started again from 0.
    case restarted(reason: String)
    /// A request failed and is retried after `delay`.
    case retrying(attempt: Int, delay: Duration, reason: String)
    /// Something the user should know that does not stop the download.
    case warning(String)
    /// A checkpoint was written; `bytesDone` bytes are safe on disk.
    case checkpointed(bytesDone: Int64)
    /// The download paused; the checkpoint is flushed. Run it again to resume.
    case paused(DownloadProgress)
    /// The file is complete, verified and renamed to its final name.
    case completed(DownloadResult)
    /// The download was cancelled; partial file and checkpoint are deleted.
    case cancelled
    /// The download failed.
    case failed(TransferError)
    /// A delta download's stages (docs/delta.md): the seeds' scans and what is left to fetch.
    case delta(DeltaStage)
    /// The sources of a download from several (docs/mirrors.md): what each delivered, which were dropped and
    /// why. Sent every second while it runs, and with `final` when it ends, pauses or fails.
    case sources([SourceReport], final: Bool)
}

/// Where a delta download is before its fetch (docs/delta.md).
public enum DeltaStage: Sendable, Equatable {
    /// The partial file of an earlier run already holds `blocks` of the target's `of` blocks.
    case resumed(blocks: Int, of: Int)
    /// A seed is being scanned: `scanned` of its `size` bytes so far (about every 250 ms).
    case scanning(seed: String, scanned: Int64, size: Int64)
    /// A seed was scanned: `blocks` of the target's `of` blocks were found in it (and in no seed before it).
    case scanned(seed: String, blocks: Int, of: Int, seconds: Double)
    /// What is left: `toFetch` bytes from the server, `reused` from the seeds and the partial file.
    case planned(toFetch: Int64, reused: Int64, total: Int64)
}

/// A snapshot of a running download.
public struct DownloadProgress: Sendable, Equatable {
    /// Bytes of the object that are in the partial file (verified or written).
    public var bytesDone: Int64
    /// The object's length, when known.
    public var totalBytes: Int64?
    /// Bytes received over the network in this run, including bytes received more than once.
    public var bytesFetched: Int64
    /// The recent receive rate.
    public var bytesPerSecond: Double
    /// Segments with a request in flight.
    public var activeSegments: Int
    /// Bytes received in this run that were thrown away: read and not kept (past a range's end, a refused
    /// response's body) or left unread in the kernel when a connection closed (a pause).
    public var discardedBytes: Int64
    /// Background mode's window, connections and delays (docs/background.md); nil in the foreground or before the
    /// first round-trip sample.
    public var background: BackgroundState?
    /// Whether the download runs in background mode (docs/background.md).
    public var backgroundMode = false

    /// Creates a snapshot.
    public init(
        bytesDone: Int64, totalBytes: Int64?, bytesFetched: Int64, bytesPerSecond: Double, activeSegments: Int,
        discardedBytes: Int64 = 0
    ) {
        self.bytesDone = bytesDone
        self.totalBytes = totalBytes
        self.bytesFetched = bytesFetched
        self.bytesPerSecond = bytesPerSecond
        self.activeSegments = activeSegments
        self.discardedBytes = discardedBytes
    }
}

/// A finished download.
public struct DownloadResult: Sendable, Equatable {
    /// The final path.
    public var path: String
    /// The file's sha256, lower-case hex; nil unless it was asked for (`computeSHA256`, `expectedSHA256`).
    public var sha256: String?
    /// The file's length.
    public var totalBytes: Int64
    /// Body bytes received over the network in this run, whatever became of them (docs/get.md, "Counts").
    public var bytesFetched: Int64
    /// Bytes of the file received more than once in this run: `bytesFetched - discardedBytes - (totalBytes -
    /// resumedBytes)`, never below 0; 0 in a download where nothing was asked twice.
    public var refetchedBytes: Int64
    /// Bytes of the file that were in the verified partial file when this run started and are still in it
    /// at the end (0 when a restart from 0 threw the partial away).
    public var resumedBytes: Int64
    /// Bytes received in this run and not in the file: past a range's end, unread in the kernel at a close,
    /// and everything written before a restart from 0 (see `DownloadProgress.discardedBytes`).
    public var discardedBytes: Int64 = 0

    /// The one definition of `refetchedBytes`: every fetched byte is either in the file (new, or again) or
    /// discarded, so `fetched = (total - resumed) + refetched + discarded`.
    public static func refetched(fetched: Int64, discarded: Int64, total: Int64, resumed: Int64) -> Int64 {
        let new = max(0, total - max(0, resumed))
        let (kept, overflow) = fetched.subtractingReportingOverflow(max(0, discarded))
        guard !overflow else { return 0 }
        return max(0, kept - new)
    }
}

/// How `Download.run()` ended, when it did not throw.
public enum DownloadOutcome: Sendable, Equatable {
    /// The file is complete.
    case completed(DownloadResult)
    /// `pause()` stopped it; the checkpoint is flushed and `run()` resumes it.
    case paused
    /// `cancel()` stopped it; nothing is left on disk.
    case cancelled
}
