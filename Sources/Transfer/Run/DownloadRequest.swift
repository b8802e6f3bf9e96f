/// What to download, where to, and how. A value: the `Download` copies it.
public struct DownloadRequest: Sendable {
    /// The GET URL. A presigned query is sent intact and redacted whenever the URL is printed.
    public var url: String
    /// An optional separate HEAD URL (presigned URLs are signed per method). HEAD is never required.
    public var headURL: String?
    /// The final path. The partial file is `destination + ".part"`, the checkpoint
    /// `destination + ".part.checkpoint"` (see docs/checkpoint.md).
    public var destination: String
    /// Parallel ranged requests; nil is automatic: 1 below 8 MiB, otherwise up to 4.
    public var segments: Int?
    /// The expected sha256 in hex; the download fails with `checksumMismatch` when it differs.
    public var expectedSHA256: String?
    /// Compute the whole-file sha256 even without an expected one (`get --print-sha256`). Without either,
    /// the result reports no sha256: the partial file's integrity rests on the per-chunk CRC-32C.
    public var computeSHA256: Bool = false
    /// Overwrite an existing final file.
    public var force: Bool
    /// Resume a partial file even when the server gave no validator (no strong ETag, no Last-Modified).
    public var resumeUnvalidated: Bool
    /// A captive portal's or an intercepting proxy's answer (`Interception`) is waited out with back-off
    /// (the daemon's jobs; `Download.retryNow()` ends the wait) instead of ending the run with `.intercepted`.
    public var waitOutInterception = false
    /// Why the link in use is known to be intercepted now (a captive portal, a limited network), or nil: a
    /// TLS certificate failure then is a wait, not a failure. Must be cheap and must not block.
    public var interceptedLink: (@Sendable () -> String?)?
    /// Bytes per second for the whole download; nil is unlimited. Change it while running with
    /// `Download.setRateLimit(_:)`.
    public var rateLimit: Int64?
    /// The source IP outgoing connections bind to (per-link routing); nil lets the kernel choose.
    public var localAddress: String?
    /// Write a checkpoint after this many bytes per segment...
    public var checkpointEveryBytes: Int64
    /// ... or after this long, whichever comes first.
    public var checkpointEvery: Duration
    /// The unit of the per-chunk CRC-32C in the checkpoint and of range splitting.
    public var chunkSize: Int64
    /// A request that makes no progress for this long is cancelled and retried.
    public var noProgressTimeout: Duration
    /// Retries of one range without progress before the download fails; `Int.max` is forever.
    public var maxRetries: Int
    /// The longest back-off between retries (exponential from 250 ms, with jitter).
    public var retryCap: Duration = .seconds(30)
    /// The largest object accepted: a larger declared length, or a body of unknown length that grows past
    /// it, fails the download (`tooLarge`). Nil: `ObjectLimits.maxBytes`.
    public var maxSize: Int64?
    /// A request whose body arrives slower than this many bytes per second over `lowSpeedTime` is
    /// abandoned and retried (a server dripping a byte every 29 s never trips the read timeout). 0: off.
    public var lowSpeedLimit: Int64
    /// The window of `lowSpeedLimit`.
    public var lowSpeedTime: Duration

    /// How long a connection may go without a byte: `noProgressTimeout`, or the low-speed window when it is on
    /// and shorter (a total stall is below any limit: curl's `--speed-time` ends it too).
    var readTimeout: Duration {
        lowSpeedLimit > 0 && lowSpeedTime > .zero ? min(noProgressTimeout, lowSpeedTime) : noProgressTimeout
    }
    /// Called once when the object's real length becomes known (HEAD or first response), before any body
    /// byte is read: the engine decides again with the real size. False stops the download as a pause.
    public var admitTotal: (@Sendable (Int64) async -> Bool)?
    /// A delta download's seeds are scanned: called with the bytes left to fetch and the file's length before
    /// any range is fetched. False stops the download as a pause. Nil: `admitTotal` is not asked either (the
    /// file's length is not what a delta costs).
    public var admitDelta: (@Sendable (_ toFetch: Int64, _ total: Int64) async -> Bool)?
    /// Whose rights the download's files are created, opened and renamed with (the daemon sets the user who
    /// asked); nil is the process's own.
    public var identity: FileIdentity?
    /// Whom https servers are verified against and which client certificate is shown (the system's CA
    /// store and none by default).
    public var tls: TLSSettings = .system
    /// Asked of every URL before a request goes to it (the daemon's word on the link that reaches it,
    /// docs/mirrors.md "Links and preferences"). One URL refused waits for `retryNow()` (a link change) and
    /// asks again, as does a redirect to a refused URL. With several sources (`mirrors`) a refused one is left
    /// out (and a source whose redirect is refused, dropped), `.standby` uses one only while no other source
    /// is left, and every source refused waits as one URL does. Nil: every URL is used.
    public var judgeSource: (@Sendable (_ url: String) async -> SourceUse)?
    /// Speak HTTP/2 where an https server offers it (ALPN): the segments are streams of one connection.
    /// Off by default: on the figures of bench/download, connections are faster here (docs/get.md).
    public var http2 = false
    /// Background mode (docs/background.md): the receive window of the download's connections follows the
    /// queuing delay they see (`BackgroundWindow`), so other traffic on the link keeps its latency. Change it
    /// while running with `Download.setBackground(_:)`.
    public var background = false
    /// The queuing delay background mode aims at.
    public var backgroundTarget: Duration = BackgroundWindow.defaultTarget
    /// A delta download (docs/delta.md): the blocks the destination and the seeds already hold are taken from
    /// them and only the rest is fetched, guided by the zsync control file. Nil: an ordinary download.
    public var delta: DeltaSource?
    /// A download from several sources (docs/mirrors.md): `url` is one of them, `mirrors` lists them all with
    /// what identifies the file. Nil: one source, `url`.
    public var mirrors: MirrorSet?
    /// A server that answers with a Metalink file (`application/metalink4+xml`, `application/metalink+xml`) is
    /// read as the list of the object's sources, as `--metalink URL` would (docs/mirrors.md). False saves the
    /// Metalink file itself.
    public var followMetalink = true
    /// The destination's name was only taken from the URL (`get` without `-o`): a Metalink file read from a
    /// server names the file instead (its `name`, in the same folder), as aria2c names it.
    public var nameFromMetalink = false
    /// Which proxy requests go through (none by default; `get` reads the environment).
    public var proxy: ProxySettings = .direct
    /// Called on the network path with the size of every received body buffer (for per-link
    /// accounting). Must be cheap and must not block.
    public var onBytes: (@Sendable (Int) -> Void)?
    /// Asked after each received buffer is written: false holds the segment's reads (an allowance such as
    /// a data budget ran out) until it turns true again, checked at `Download.retryNow()` and every second,
    /// or until the download stops. The buffer in hand is kept; what the kernel holds is not read, so no
    /// more than one buffer per connection is counted past the allowance. Must be cheap and must not block.
    public var allowance: (@Sendable () -> Bool)?

    /// A request with the defaults: automatic segments, checkpoint every 4 MiB or 1 s, 4 MiB chunks.
    public init(
        url: String,
        destination: String,
        headURL: String? = nil,
        segments: Int? = nil,
        expectedSHA256: String? = nil,
        force: Bool = false,
        resumeUnvalidated: Bool = false,
        rateLimit: Int64? = nil,
        localAddress: String? = nil,
        checkpointEveryBytes: Int64 = 4 << 20,
        checkpointEvery: Duration = .seconds(1),
        chunkSize: Int64 = 4 << 20,
        noProgressTimeout: Duration = .seconds(30),
        maxRetries: Int = 8,
        maxSize: Int64? = nil,
        lowSpeedLimit: Int64 = 1024,
        lowSpeedTime: Duration = .seconds(60),
        identity: FileIdentity? = nil,
        onBytes: (@Sendable (Int) -> Void)? = nil
    ) {
        self.url = url
        self.destination = destination
        self.headURL = headURL
        self.segments = segments
        self.expectedSHA256 = expectedSHA256
        self.force = force
        self.resumeUnvalidated = resumeUnvalidated
        self.rateLimit = rateLimit
        self.localAddress = localAddress
        self.checkpointEveryBytes = checkpointEveryBytes
        self.checkpointEvery = checkpointEvery
        self.chunkSize = chunkSize
        self.noProgressTimeout = noProgressTimeout
        self.maxRetries = maxRetries
        self.maxSize = maxSize
        self.lowSpeedLimit = lowSpeedLimit
        self.lowSpeedTime = lowSpeedTime
        self.identity = identity
        self.onBytes = onBytes
    }

    /// Whether the whole-file sha256 is computed: asked for, or needed to check the expected one.
    public var wantsSHA256: Bool { computeSHA256 || expectedSHA256 != nil }

    /// Whether the finished file replaces one at the destination: `force`, or a delta download (whose
    /// destination holds the older version it updates).
    public var replacesDestination: Bool { force || delta != nil }

    /// The partial file's path.
    public var partialPath: String { destination + ".part" }
    /// The checkpoint's path.
    public var checkpointPath: String { destination + ".part.checkpoint" }

    /// The segment count for an object of `total` bytes: the explicit count, or 1 below 8 MiB and
    /// otherwise up to 4 (at least one chunk each).
    public func segmentCount(total: Int64) -> Int {
        if let segments { return max(1, segments) }
        guard total >= 8 << 20 else { return 1 }
        return Int(max(1, min(4, total / max(chunkSize, 1))))
    }
}
