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
    /// All bytes received over the network in this run.
    public var bytesFetched: Int64
    /// Bytes received in this run that were discarded or that an earlier run had already received.
    public var refetchedBytes: Int64
    /// Bytes that were already in a verified partial file when this run started.
    public var resumedBytes: Int64
    /// Bytes received in this run and thrown away (see `DownloadProgress.discardedBytes`).
    public var discardedBytes: Int64 = 0
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
