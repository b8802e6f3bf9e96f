import AsyncHTTPClient
import CFileCalls
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One checkpointed, resumable download: the library's entry point.
///
/// ```swift
/// let download = Download(request: DownloadRequest(url: url, destination: "/tmp/file.iso"))
/// async let outcome = download.run()
/// for await event in download.events { print(event) }
/// ```
///
/// `run()` resumes from the checkpoint beside the partial file when one exists. `pause()` stops it with
/// the checkpoint flushed (run it again to resume); `cancel()` stops it and deletes what it wrote.
public final class Download: Sendable {
    enum StopReason: Sendable { case pause, cancel }

    struct Control {
        var running = false
        var stopRequested: StopReason?
        var stopSignal: AsyncStream<StopReason>.Continuation?
        var stopWaiters: [CheckedContinuation<Bool, Never>] = []
        var localAddress: String?
        var pausedProgress: DownloadProgress?
        var background = false
    }

    /// The request this download carries out.
    public let request: DownloadRequest
    /// Progress and state changes, in order. One consumer; finished when the download completes,
    /// fails or is cancelled (not when it pauses).
    public let events: AsyncStream<DownloadEvent>
    let sink: AsyncStream<DownloadEvent>.Continuation
    let client: HTTPClient?
    let logger: Logger
    let limiter: RateLimiter
    /// How many segments may have a request out: set by the window governor in background mode.
    let gate = RequestGate()
    let control: Mutex<Control>
    let retry: RetryPolicy
    let wake = RetryWake()

    /// Creates a download; nothing happens until `run()`.
    /// - Parameters:
    ///   - client: the HTTP client; build its configuration with `TransferClient.configuration()`
    ///     (redirects must be disallowed: the downloader follows them itself). Nil: each `run()` makes its
    ///     own client, whose connections a pause can drain before closing them (`ConnectionTap`), so
    ///     what the kernel already received is kept rather than thrown away.
    ///   - logger: receives info and debug messages; URLs are logged with their query redacted.
    public init(
        request: DownloadRequest, client: HTTPClient? = nil, logger: Logger = Logger(label: "meterwise.transfer")
    ) {
        self.request = request
        self.client = client
        self.logger = logger
        self.limiter = RateLimiter(rate: request.rateLimit)
        self.retry = RetryPolicy(cap: max(request.retryCap, .milliseconds(250)), maxAttempts: request.maxRetries)
        var control = Control()
        control.localAddress = request.localAddress
        control.background = request.background
        self.control = Mutex(control)
        (events, sink) = AsyncStream.makeStream(of: DownloadEvent.self, bufferingPolicy: .bufferingNewest(4096))
    }

    /// Changes the rate limit (bytes per second, nil for none); takes effect on the next buffer.
    public func setRateLimit(_ bytesPerSecond: Int64?) {
        limiter.setRate(bytesPerSecond)
    }

    /// The current rate limit.
    public var rateLimit: Int64? { limiter.rate }

    /// Turns background mode on or off (docs/background.md); takes effect within one turn of the window
    /// governor (20 ms).
    public func setBackground(_ on: Bool) {
        control.withLock { $0.background = on }
    }

    /// Whether the download runs in background mode now.
    public var isBackground: Bool { control.withLock { $0.background } }

    /// Binds the next connections to this source address (nil: any). Requests in flight keep theirs.
    public func setLocalAddress(_ address: String?) {
        control.withLock { $0.localAddress = address }
    }

    /// Ends the back-off of segments waiting to retry, so they try again now (a link change: the outage
    /// may be over). No effect on segments that are transferring.
    public func retryNow() {
        wake.wakeAll()
    }

    /// Stops a running download: in-flight requests are cancelled at once, queued data is written and
    /// the checkpoint flushed; `run()` then returns `.paused`. Returns when that is done.
    public func pause() async {
        await stop(.pause)
    }

    /// Stops the download and deletes the partial file and the checkpoint; `run()` returns `.cancelled`.
    public func cancel() async {
        let wasRunning = await stop(.cancel)
        if !wasRunning {
            removePartial()
            sink.yield(.cancelled)
            sink.finish()
        }
    }

    /// Asks the download to stop without waiting: a `run()` in progress, or the next one to begin, returns
    /// `.paused` (`.cancelled` for a cancel) once its checkpoint is written. For a caller that learns of the
    /// end from `run()` itself (the engine), so no task waits on the stop.
    public func requestStop(cancel: Bool) {
        let reason: StopReason = cancel ? .cancel : .pause
        control.withLock { s in
            if s.stopRequested != .cancel { s.stopRequested = reason }
            s.stopSignal?.yield(reason)
        }
    }

    /// Asks a running download to stop and waits until `run()` has returned; false when it was not running.
    @discardableResult
    private func stop(_ reason: StopReason) async -> Bool {
        await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            let running = control.withLock { s -> Bool in
                guard s.running else { return false }
                if s.stopRequested != .cancel { s.stopRequested = reason }
                s.stopSignal?.yield(reason)
                s.stopWaiters.append(c)
                return true
            }
            if !running { c.resume(returning: false) }
        }
    }

    /// After a failure before any byte was kept (a TLS failure, a 404): the empty partial file goes, so no
    /// `FILE.part` of 0 bytes is left behind. One with data, or with a checkpoint, stays for a resume.
    func removeEmptyPartial() {
        guard let directory = try? OutputDirectory.open(holding: request.destination, identity: request.identity) else {
            return
        }
        let names = OutputNames(destination: request.destination)
        guard !directory.exists(names.checkpoint), case .own(let fd) = directory.openOwn(names.partial, writable: false)
        else { return }
        defer { close(fd) }
        // Only a partial file no run holds: another download's (the one that made this run give way with
        // `outputBusy`) is locked, and stays.
        guard mw_try_lock(fd) == 0 else { return }
        var st = stat()
        if fstat(fd, &st) == 0 && st.st_size == 0 { try? directory.remove(names.partial) }
    }

    func removePartial() {
        Self.removePartial(of: request.destination, identity: request.identity)
    }

    /// Deletes the partial file and checkpoint of a download to `destination` (a cancelled job's), with the
    /// identity's rights; a file there that is not the identity's own is left alone.
    public static func removePartial(of destination: String, identity: FileIdentity?) {
        guard let directory = try? OutputDirectory.open(holding: destination, identity: identity) else { return }
        let names = OutputNames(destination: destination)
        for name in [
            names.checkpoint, names.partial, names.deltaPartial, names.controlCache, names.mirrorPartial,
            names.pieceRecord,
        ] {
            if case .own(let fd) = directory.openOwn(name, writable: false) {
                close(fd)
                try? directory.remove(name)
            }
        }
        try? directory.remove(names.checkpoint + ".tmp")
        directory.sync()
    }

    /// Runs the download to completion, pause or cancellation, resuming from the checkpoint if there
    /// is one. Call it again after `.paused` to resume.
    public func run() async throws(TransferError) -> DownloadOutcome {
        // A stop requested before the run began (`requestStop`) stops it at once; `run()` clears it on return.
        let begun = control.withLock { s -> Bool in
            guard !s.running else { return false }
            s.running = true
            return true
        }
        guard begun else {
            throw TransferError(.alreadyRunning, "This download is already running; wait for run() to return.")
        }
        var ownClient: HTTPClient?
        let client: HTTPClient
        var tap: ConnectionTap?
        var forwarder: HTTPClient?
        if let given = self.client {
            client = given
        } else {
            let connections = ConnectionTap()
            let proxy = request.proxy.server(for: request.url)
            let own = HTTPClient(
                eventLoopGroupProvider: .singleton,
                configuration: TransferClient.configuration(
                    noProgressTimeout: request.readTimeout, tls: request.tls, proxy: proxy, tap: connections,
                    http2: request.http2)
            )
            ownClient = own
            client = own
            tap = connections
            if proxy?.kind == .http {
                // http:// requests go to the proxy as absolute-form GETs (`ForwardedRequest`), https:// through
                // `own`'s CONNECT tunnel.
                forwarder = HTTPClient(
                    eventLoopGroupProvider: .singleton,
                    configuration: TransferClient.forwarding(
                        noProgressTimeout: request.readTimeout, tls: request.tls, tap: connections)
                )
            }
        }
        // A download with several sources may need a client per proxy choice (`SourceClients`).
        let sources = SourceClients(
            download: self, client: client, forwarder: forwarder,
            choice: ownClient == nil ? nil : request.proxy.server(for: request.url), tap: tap, canMake: ownClient != nil
        )
        let result: Result<DownloadOutcome, TransferError>
        do throws(TransferError) {
            // A download from one URL waits while the caller refuses it (a mirrored one judges each source).
            var delta: DownloadOutcome? = request.mirrors == nil ? await waitForAllowedURL() : nil
            if delta != nil {
                // Stopped while waiting.
            } else if let mirrors = request.mirrors {
                delta = try await MirrorRun(download: self, clients: sources, set: mirrors).perform()
            } else if let source = request.delta {
                switch try await DeltaRun(download: self, client: client, forwarder: forwarder, source: source)
                    .perform()
                {
                case .done(let outcome): delta = outcome
                case .fallback(let why): sink.yield(.warning("No delta: \(why); downloading the whole file."))
                }
            }
            if let delta {
                result = .success(delta)
            } else {
                do throws(TransferError) {
                    result = .success(
                        try await DownloadRun(
                            download: self, client: client, forwarder: forwarder, tap: tap, sources: sources
                        ).perform())
                } catch {
                    let set: MirrorSet
                    var announced = false
                    if let answer = error.cause as? MetalinkAnswer {
                        // The server answered with a Metalink file: the download is one from its sources.
                        sink.yield(.warning("The server answered with a Metalink file; downloading from its sources."))
                        set = MirrorSet(sources: [], metalinkURL: answer.url)
                    } else if let answer = error.cause as? MirrorsAnswer {
                        // The server named other places of the file with its digest (or a download from several
                        // sources was left part-way under this name): the download is one from all of them, its own
                        // URL among them; the digest decides which have the file.
                        let n = answer.mirrors.count
                        if n > 0 {
                            sink.yield(
                                .warning(
                                    "\(RedactedURL.redact(request.url)) names \(n) other source\(n == 1 ? "" : "s") of the file (Link: rel=duplicate, with its digest); downloading from all of them."
                                ))
                        }
                        set = MirrorSet(
                            sources: [MirrorSet.Source(url: request.url)]
                                + answer.mirrors.map {
                                    MirrorSet.Source(url: $0.url, priority: $0.priority, location: $0.location)
                                }, hashes: answer.digests)
                        announced = true
                    } else {
                        throw error
                    }
                    removeEmptyPartial()
                    do throws(TransferError) {
                        result = .success(try await MirrorRun(download: self, clients: sources, set: set).perform())
                    } catch  where error.code == .checksumMismatch && announced {
                        // Announced mirrors (`MirrorsAnswer`) gave a file that is not the one the digest names, and
                        // with one digest for the whole file nothing tells which mirror was wrong: the URL given,
                        // alone, once more.
                        sink.yield(
                            .warning(
                                "\(error.message) Downloading it again from \(RedactedURL.redact(request.url)) alone."))
                        var single = DownloadRun(
                            download: self, client: client, forwarder: forwarder, tap: tap, sources: sources)
                        single.followsAnnouncements = false
                        result = .success(try await single.perform())
                    }
                }
            }
        } catch {
            result = .failure(error)
        }
        await sources.shutdown()
        if let ownClient { try? await ownClient.shutdown() }
        if let forwarder { try? await forwarder.shutdown() }
        let waiters = control.withLock { s -> [CheckedContinuation<Bool, Never>] in
            s.running = false
            s.stopSignal = nil
            s.stopRequested = nil
            defer { s.stopWaiters = [] }
            return s.stopWaiters
        }
        switch result {
        case .success(let outcome):
            switch outcome {
            case .completed(let r):
                sink.yield(.completed(r))
                sink.finish()
            case .cancelled:
                // Whatever ended it (a wait before any request, too), a cancelled download leaves no partial.
                removePartial()
                sink.yield(.cancelled)
                sink.finish()
            case .paused:
                break
            }
            for w in waiters { w.resume(returning: true) }
            return outcome
        case .failure(let error):
            removeEmptyPartial()
            sink.yield(.failed(error))
            sink.finish()
            for w in waiters { w.resume(returning: true) }
            throw error
        }
    }

    /// Why `url` is not asked now (`judgeSource` refused it), as a wait's reason says it.
    static func refusal(_ url: String, _ why: String) -> String {
        "\(RedactedURL.redact(url)) may not be reached now: \(why); waiting for a link change"
    }

    /// Waits while `judgeSource` refuses the download's URL (it is reached over a link the job may not use
    /// now), saying why, until a link change (`retryNow`) or a back-off of 5 s to a minute lets it ask again:
    /// nil once it may go on, or how a stop ended the wait.
    func waitForAllowedURL() async -> DownloadOutcome? {
        guard let judge = request.judgeSource else { return nil }
        var attempt = 0
        while case .refuse(let why) = await judge(request.url) {
            attempt += 1
            let reason = Self.refusal(request.url, why)
            if let stopped = await waitBeforeAsking(
                attempt: attempt, delay: .seconds(min(60, 5 * attempt)), reason: reason)
            {
                return stopped
            }
        }
        return nil
    }

    /// A fresh stop signal for one attempt; yields at once if a stop was already requested.
    func makeStopSignal() -> AsyncStream<StopReason> {
        let (stream, continuation) = AsyncStream.makeStream(of: StopReason.self)
        control.withLock { s in
            s.stopSignal = continuation
            if let r = s.stopRequested { continuation.yield(r) }
        }
        return stream
    }

    /// The stop asked for and not yet carried out, if any.
    var pendingStop: StopReason? { control.withLock { $0.stopRequested } }

    /// The source address the next connections are bound to (`setLocalAddress`); nil: any.
    public var localAddress: String? { control.withLock { $0.localAddress } }

    /// The counts of the last run that ended paused (what its `.paused` event said): for a caller that
    /// learns of the end from `run()` and wants them with it.
    public var pausedProgress: DownloadProgress? {
        control.withLock { $0.pausedProgress }
    }

    func setPausedProgress(_ progress: DownloadProgress) {
        control.withLock { $0.pausedProgress = progress }
    }
}
