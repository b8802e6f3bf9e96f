import AsyncHTTPClient
import CFileCalls
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One call of `Download.run()`: load or discard the checkpoint, run attempts until the object is
/// complete (restarting from 0 when the object changed), then verify and rename.
struct DownloadRun: Sendable {
    let download: Download
    let client: HTTPClient
    /// The client for http:// requests through an HTTP proxy (absolute-form GETs to the proxy); nil when the
    /// download has no HTTP proxy or runs on a client given by the caller.
    let forwarder: HTTPClient?
    /// The connections of the download's own client; nil with a client given by the caller.
    let tap: ConnectionTap?
    /// The clients for each proxy choice (`SourceClients.route`): each URL asked, a redirect's too, goes by
    /// its own; nil: every URL by `client` and `forwarder`.
    var sources: SourceClients? = nil
    /// Whether a server's Metalink answer or announced mirrors turn the download into one from several sources
    /// (`MetalinkAnswer`, `MirrorsAnswer`); false after such a download failed its digest (`Download.run`).
    var followsAnnouncements = true
    var request: DownloadRequest { download.request }
    var logger: Logger { download.logger }

    /// How one attempt ended.
    enum AttemptEnd: Sendable {
        case complete
        case restart(RestartReason)
        case stopped(Download.StopReason)
        case failed(TransferError)
    }

    /// Holds the current attempt's board for the writer's checkpoint builder.
    final class BoardRef: Sendable {
        let board = Mutex<DownloadBoard?>(nil)
    }

    /// Run-wide counters.
    final class Totals: Sendable {
        let fetched = Mutex<Int64>(0)
        let discarded = Mutex<Int64>(0)
    }

    static let maxRestarts = 4

    /// The partial file: the one there if it is ours; a symlink or a file that is not ours is removed
    /// with a notice (with the identity's rights, so only what its user may remove) and never opened.
    /// `created` is true when the file is new.
    func openPartial(_ directory: OutputDirectory, _ names: OutputNames) throws(TransferError) -> (
        fd: Int32, created: Bool
    ) {
        for _ in 0..<4 {
            switch directory.openOwn(names.partial, writable: true) {
            case .own(let fd): return (fd, false)
            case .missing: break
            case .untrusted(let why):
                download.sink.yield(.warning("Not using the partial file: \(why). It is removed; starting from 0."))
                logger.notice("untrusted partial file removed", metadata: ["why": "\(why)"])
                do throws(TransferError) {
                    try directory.remove(names.partial)
                } catch {
                    throw TransferError(
                        .permission,
                        "\(why), and it cannot be removed as uid \(request.identity.ownerUID); remove it, or choose another path with -o."
                    )
                }
            }
            if let fd = try directory.createIfAbsent(names.partial, mode: 0o600) { return (fd, true) }
        }
        throw TransferError(
            .outputBusy,
            "\(directory.display(names.partial)) keeps changing; another program writes there. Choose another path with -o."
        )
    }

    /// The destination as an absolute path: its directory as the kernel resolved it when it was opened
    /// (symlinks and `..` followed), or, when the kernel does not say, the path as typed made absolute
    /// from the working directory.
    static func wholePath(of directory: OutputDirectory, names: OutputNames, typed: String) -> String {
        let parent: String
        if let resolved = DestinationCheck.path(of: directory) {
            parent = resolved
        } else if typed.hasPrefix("/") {
            return typed
        } else {
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            guard getcwd(&buffer, buffer.count) != nil else { return typed }
            let cwd = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let relative = FileIO.directory(of: typed)
            parent = relative == "." ? cwd : (cwd == "/" ? "" : cwd) + "/" + relative
        }
        return parent == "/" ? "/" + names.final : parent + "/" + names.final
    }

    func perform() async throws(TransferError) -> DownloadOutcome {
        if let problem = DownloadURL.problem(request.url) { throw TransferError(.invalidURL, problem + ".") }
        let directory = try OutputDirectory.open(holding: request.destination, identity: request.identity)
        let names = OutputNames(destination: request.destination)
        if directory.exists(names.final) && !request.replacesDestination {
            // A download that completed but crashed before removing its checkpoint leaves one behind.
            if !directory.exists(names.partial) { CheckpointFile.remove(in: directory, name: names.checkpoint) }
            throw TransferError(
                .destinationExists,
                "\(request.destination) already exists; pass --force to overwrite it or choose another path with -o."
            )
        }
        // The partial file, the checkpoint and the final rename all need to write the directory: a directory
        // the identity may not write (or a read-only mount) is a permission problem said up front, not a
        // file system error after the first create.
        try directory.checkWritable()
        // The checkpoint holds the whole path, so `-o g` here and `-o /abs/dir/g` from elsewhere are one
        // download (checkpoint.md, `destination`).
        let wholeDestination = Self.wholePath(of: directory, names: names, typed: request.destination)
        let (fd, created) = try openPartial(directory, names)
        // One writer per file: the lock lives as long as the descriptor, through the final rename.
        guard mw_try_lock(fd) == 0 else {
            close(fd)
            throw TransferError(
                .outputBusy,
                "Another download is writing \(directory.display(names.partial)) now; wait for it to finish or choose another path with -o."
            )
        }
        do throws(TransferError) {
            try LockedPartial.stillLinked(fd, names.partial, in: directory)
            try LockedPartial.noOtherWriter(of: names, besides: names.partial, in: directory)
        } catch {
            if created, LockedPartial.isLinked(fd, names.partial, in: directory) {
                try? directory.remove(names.partial)
            }
            _ = mw_unlock(fd)
            close(fd)
            throw error
        }
        // Released when this run ends, however it ends (the descriptor may outlive it in queued blocks).
        defer { _ = mw_unlock(fd) }
        var checkpoint: Checkpoint?
        var unreadable = false
        switch CheckpointFile.read(in: directory, name: names.checkpoint) {
        case .none: break
        case .unreadable: unreadable = true
        case .checkpoint(let found): checkpoint = created ? nil : found
        case .untrusted(let why):
            download.sink.yield(.warning("Not using the checkpoint: \(why). Starting from 0."))
            CheckpointFile.remove(in: directory, name: names.checkpoint)
        }
        let action = ResumeDecision.decide(
            checkpoint: checkpoint, unreadable: unreadable, url: request.url, destination: wholeDestination,
            resumeUnvalidated: request.resumeUnvalidated
        )
        var known: KnownObject?
        var acceptRanges = false
        var resumed: Int64 = 0
        let file: PartialFile
        let partialPath = directory.display(names.partial)
        switch action {
        case .fresh:
            file = try PartialFile(
                fd: fd, path: partialPath, chunkSize: request.chunkSize, total: nil, truncate: true,
                digests: request.wantsSHA256)
        case .discard(let reason):
            download.sink.yield(.warning("Not resuming the partial file: \(reason.rawValue). Starting from 0."))
            logger.info("checkpoint discarded", metadata: ["reason": "\(reason)"])
            CheckpointFile.remove(in: directory, name: names.checkpoint)
            file = try PartialFile(
                fd: fd, path: partialPath, chunkSize: request.chunkSize, total: nil, truncate: true,
                digests: request.wantsSHA256)
        case .resume(let cp):
            file = try PartialFile(
                fd: fd, path: partialPath, chunkSize: cp.chunkSize, total: cp.totalBytes, truncate: false,
                digests: request.wantsSHA256)
            // A pause or a cancel while a large partial file is checked ends the check: the checkpoint stays as it
            // was (one written from the pieces checked so far would lose the rest).
            let pieces = cp.pieces
            let download = download
            let checked = await OffThePool.run { file.verify(pieces, stop: { download.pendingStop != nil }) }
            guard let good = checked else {
                if download.pendingStop == .cancel { return .cancelled }
                let progress = DownloadProgress(
                    bytesDone: cp.bytesDone, totalBytes: cp.totalBytes, bytesFetched: 0, bytesPerSecond: 0,
                    activeSegments: 0, discardedBytes: 0)
                download.setPausedProgress(progress)
                download.sink.yield(.paused(progress))
                logger.info("paused while the partial file was checked", metadata: ["bytes": "\(cp.bytesDone)"])
                return .paused
            }
            if good.count < cp.pieces.count {
                download.sink.yield(
                    .warning(
                        "\(cp.pieces.count - good.count) piece(s) the checkpoint lists do not match the partial file (damaged, overlapping or out of place); their bytes will be fetched again."
                    )
                )
            }
            known = KnownObject(
                validators: cp.validators, total: cp.totalBytes,
                contentType: cp.contentType.map { String($0.prefix(200)) },
                // A checkpoint written before 2026-11-27 kept the source with its credentials: not written back.
                source: cp.source.map { AnswerPath.place(String($0.prefix(4096))) })
            acceptRanges = cp.acceptRanges
            resumed = good.reduce(0) { $0 + $1.length }
            logger.info(
                "resuming", metadata: ["url": "\(RedactedURL.redact(request.url))", "bytes": "\(resumed)"]
            )
        }
        // What the partial held at the start and still holds: 0 once a restart threw it away.
        var resumedKept = resumed
        var unstableETag = false
        if case .resume(let cp) = action, cp.unstableETag == true { unstableETag = true }
        let ref = BoardRef()
        let totals = Totals()
        let url = request.url
        let destination = wholeDestination
        let sink = download.sink
        let writer = FileWriter(
            file: file, directory: directory, checkpointName: names.checkpoint,
            everyBytes: request.checkpointEveryBytes,
            every: request.checkpointEvery,
            makeCheckpoint: { pieces in
                ref.board.withLock { $0 }?.checkpoint(url: url, destination: destination, pieces: pieces)
            },
            onCheckpoint: { done in sink.yield(.checkpointed(bytesDone: done)) }
        )
        if known == nil, let headURL = request.headURL, let learned = await probeHead(headURL) {
            known = learned
            acceptRanges = true
            await writer.onQueue { $0.setTotal(learned.total) }
        }
        var restarts = 0
        var degraded = false
        var plain = false
        // A download from several sources left part-way under this name (one this URL's server turned into
        // one: `MirrorsAnswer`, `MetalinkAnswer`): the first answer will likely turn it into one again, so the
        // first request asks for one byte, not a span that would be lost.
        let sourcesLeftPartWay =
            followsAnnouncements && request.followMetalink && request.mirrors == nil && resumed == 0
            && directory.exists(names.pieceRecord)
        // Bytes this run wrote since the last restart: a restart throws them away (`discarded_bytes`).
        var writtenSinceRestart: Int64 = 0
        if unstableETag, resumed > 0, let total = known?.total {
            // The server's ETag could not be trusted: the bytes must prove to be the same first (Last-Modified
            // alone has a one-second grain, and a server that fakes one validator may fake the other).
            let verdict = await proveContent(total: total, writer: writer) { body, _ in
                totals.fetched.withLock { $0 += Int64(body) }
                totals.discarded.withLock { $0 += Int64(body) }
            }
            switch verdict {
            case .same:
                download.sink.yield(
                    .warning("The partial file's samples match the server's bytes (its ETag is not stable): resuming."))
            case .unknown:
                // Nothing is thrown away on a failure to ask: the partial stays for the next run.
                throw TransferError(
                    .retriesExhausted,
                    "The server did not answer the requests that prove the partial file is still its object (its ETag is not stable); nothing was thrown away. Run the command again."
                )
            case .changed:
                download.sink.yield(.restarted(reason: RestartReason.objectChanged.rawValue))
                try await writer.reset()
                CheckpointFile.remove(in: directory, name: names.checkpoint)
                known = nil
                resumedKept = 0
            }
        }
        while true {
            let pieces = await writer.onQueue { $0.pieces() }
            let plan: RangePlan
            if let total = known?.total {
                let have = pieces.map { $0.offset..<($0.offset + $0.length) }
                plan = RangePlan(
                    total: total, missing: RangePlan.missing(total: total, have: have), chunkSize: file.chunkSize)
                if plan.isComplete {
                    return try await finish(
                        writer: writer, directory: directory, names: names, total: total, resumed: resumedKept,
                        totals: totals)
                }
            } else {
                plan = .fresh(chunkSize: file.chunkSize)
            }
            let segmentsOption = degraded ? 1 : request.segments
            let request = self.request
            let board = DownloadBoard(
                plan: plan, known: known, acceptRanges: acceptRanges, plain: plain,
                parts: { total in
                    var r = request
                    r.segments = segmentsOption
                    return r.segmentCount(total: total)
                },
                resumedBytes: pieces.reduce(0) { $0 + $1.length }, unstableETag: unstableETag,
                sourcesLeftPartWay: sourcesLeftPartWay
            )
            plain = false
            ref.board.withLock { $0 = board }
            let end = await attempt(board: board, writer: writer, totals: totals)
            writtenSinceRestart += board.kept.written
            known = board.known
            acceptRanges = board.acceptRanges
            unstableETag = board.unstableETag
            switch end {
            case .complete:
                try await writer.drain()
                if known?.total == nil {
                    throw TransferError(.protocolViolation, "The server sent no length and the body ended; try again.")
                }
                let total = known?.total
                await writer.onQueue { $0.setTotal(total) }
                continue
            case .restart(let reason):
                restarts += 1
                guard restarts <= Self.maxRestarts else {
                    try? await writer.checkpointNow()
                    throw TransferError(
                        reason == .unvalidated ? .retriesExhausted : .objectUnstable,
                        GiveUpText.restartsExhausted(
                            restarts: Self.maxRestarts, reason: reason, failure: board.lastFailure)
                    )
                }
                logger.info(
                    "restarting from 0",
                    metadata: ["reason": "\(reason)", "thrown": "\(resumedKept + writtenSinceRestart)"])
                download.sink.yield(.restarted(reason: reason.rawValue))
                try await writer.drain()
                try await writer.reset()
                CheckpointFile.remove(in: directory, name: names.checkpoint)
                // What this run wrote is thrown away with the partial: received and not kept (get.md).
                totals.discarded.withLock { $0 += writtenSinceRestart }
                writtenSinceRestart = 0
                resumedKept = 0
                known = nil
                acceptRanges = false
                // The next attempt asks `bytes=0-` and learns again what the server does: ranges and segments
                // as soon as it answers 206. Only a server whose ranges are broken (a Content-Range that is
                // not what was asked, a 416 for the object's own start) gets one plain GET from then on.
                if reason == .rangeMismatch || reason == .rangeNotSatisfiable {
                    degraded = true
                    plain = true
                }
            case .stopped(.pause):
                try await writer.checkpointNow()
                let c = board.counters
                let progress = DownloadProgress(
                    bytesDone: c.done, totalBytes: c.total, bytesFetched: totals.fetched.withLock { $0 },
                    bytesPerSecond: 0, activeSegments: 0, discardedBytes: totals.discarded.withLock { $0 }
                )
                download.setPausedProgress(progress)
                download.sink.yield(.paused(progress))
                logger.info(
                    "paused", metadata: ["bytes": "\(c.done)", "discarded": "\(totals.discarded.withLock { $0 })"])
                return .paused
            case .stopped(.cancel):
                try? await writer.drain()
                download.removePartial()
                return .cancelled
            case .failed(let error):
                if error.code == .intercepted && board.kept.written == 0 {
                    // Nothing came from the server in this run: the checkpoint stays exactly as it was, and a first
                    // download leaves no empty partial behind.
                    if resumedKept == 0 && writtenSinceRestart == 0 && created {
                        try? await writer.drain()
                        download.removePartial()
                    }
                    throw error
                }
                try? await writer.checkpointNow()
                throw error
            }
        }
    }

    /// Verifies length and sha256, renames atomically, removes the checkpoint.
    func finish(
        writer: FileWriter, directory: OutputDirectory, names: OutputNames, total: Int64, resumed: Int64,
        totals: Totals
    ) async throws(TransferError)
        -> DownloadOutcome
    {
        try await writer.drain()
        let size = await writer.onQueue { f -> Int64 in
            if f.size > total { FileIO.truncate(fd: f.fd, to: total) }
            return f.size
        }
        let digest = request.wantsSHA256 ? try await writer.sha256(total: total) : nil
        guard size == total else {
            throw TransferError(
                .lengthMismatch,
                "The partial file has \(size) bytes but the object has \(total); run the command again to resume."
            )
        }
        try writer.file.sync()
        if let expected = request.expectedSHA256?.lowercased(), let digest, expected != digest {
            download.removePartial()
            throw TransferError(
                .checksumMismatch,
                "The download's sha256 is \(digest), not the expected \(expected); the partial file was removed. Check the checksum, or the URL serves another object."
            )
        }
        // The finished file gets the usual permissions (the partial was private to its owner).
        let mode = 0o666 & ~FileIO.processUmask
        try directory.publish(
            writer.file.fd, names.partial, as: names.final, mode: mode, replace: request.replacesDestination)
        directory.sync()
        CheckpointFile.remove(in: directory, name: names.checkpoint)
        directory.sync()
        let fetched = totals.fetched.withLock { $0 }
        let discarded = totals.discarded.withLock { $0 }
        let result = DownloadResult(
            path: request.destination, sha256: digest, totalBytes: total, bytesFetched: fetched,
            refetchedBytes: DownloadResult.refetched(
                fetched: fetched, discarded: discarded, total: total, resumed: resumed),
            resumedBytes: resumed, discardedBytes: discarded
        )
        logger.info(
            "completed",
            metadata: ["url": "\(RedactedURL.redact(request.url))", "sha256": "\(digest ?? "-")", "bytes": "\(total)"]
        )
        return .completed(result)
    }
}
