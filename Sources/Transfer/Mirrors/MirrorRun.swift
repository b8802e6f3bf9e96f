import AsyncHTTPClient
import CFileCalls
import Crypto

#if canImport(Glibc)
import Glibc
#endif

/// One download from several sources (docs/mirrors.md): read the Metalink file if there is one to fetch, ask
/// every source for the first byte, keep those that agree on the file, then fetch pieces from all of them at
/// once, check each piece as it completes, and rename. The partial file `NAME.mirror-part` has its own
/// checkpoint `NAME.mirror-part.pieces`: the pieces verified so far.
struct MirrorRun: Sendable {
    let download: Download
    let clients: SourceClients
    let set: MirrorSet
    var request: DownloadRequest { download.request }
    /// A sender for requests to `url`, through the proxy chosen for it (`no_proxy` may differ per source).
    func sender(for url: String) -> RequestSender { clients.sender(for: url) }

    /// Why a source that answered `status` is not used: "it answered HTTP N", and for an http:// URL forwarded
    /// through an HTTP proxy, that the answer came through it — a 407 is the proxy's own, and a 401 may be its
    /// refusal of the user name and password in its URL (tinyproxy answers so).
    func answered(_ status: Int, url: String) -> String {
        guard let proxy = clients.proxy(for: url), proxy.kind == .http, RedactedURL.scheme(of: url) == "http" else {
            return "it answered HTTP \(status)"
        }
        switch status {
        case 407 where proxy.username != nil:
            return "the proxy \(proxy) refused the user name and password in its URL (407); check them"
        case 407:
            return "the proxy \(proxy) asks for a user name and password (407); put them in its URL"
        case 401 where proxy.username != nil:
            return "it answered HTTP 401 through the proxy \(proxy), perhaps the proxy's refusal of the user name and "
                + "password in its URL; check them"
        default:
            return "it answered HTTP \(status) through the proxy \(proxy)"
        }
    }

    /// The piece length without Metalink pieces: 1 MiB, small enough to spread, large enough for few requests;
    /// doubled for very large files so there are never more than 1 Mi pieces (the board keeps a few bytes each).
    static func defaultPieceLength(total: Int64) -> Int64 {
        var length: Int64 = 1 << 20
        while total / length > 1 << 20 { length <<= 1 }
        return length
    }

    func perform() async throws(TransferError) -> DownloadOutcome {
        var set = set
        var destination = request.destination
        if let location = set.metalinkURL {
            let metalink = try await readMetalink(location)
            guard let file = metalink.files.first else {
                throw TransferError(.metalink, "\(RedactedURL.redact(location)) describes no file.")
            }
            if metalink.files.count > 1 {
                download.sink.yield(
                    .warning(
                        "The Metalink file describes \(metalink.files.count) files; downloading the first, \(file.name)."
                    ))
            }
            if request.nameFromMetalink, !file.name.isEmpty {
                // The name was checked as the file was read (no folder, no leading dot).
                let folder = destination.lastIndex(of: "/").map { String(destination[...$0]) } ?? ""
                destination = folder + file.name
            }
            let given = set.sources
            set = MirrorSet(file: file)
            set.add(given)
        }
        var usable: [MirrorSet.Source] = []
        for source in set.sources where !usable.contains(where: { $0.url == source.url }) {
            if let problem = DownloadURL.problem(source.url) {
                download.sink.yield(.warning("Not using \(RedactedURL.redact(source.url)): \(problem)."))
            } else {
                usable.append(source)
            }
        }
        guard !usable.isEmpty else {
            throw TransferError(.noSources, "No source of the file can be used; give at least one http(s) URL.")
        }
        // The engine's word on each source (the link it is reached over, the policy's `prefer:`): the refused wait
        // aside (they join when their link is allowed: `MirrorFetch`), and while every source is refused the
        // download waits for a link change.
        var standby: [String: String] = [:]
        var parked: [Parked] = []
        var refused: [SourceReport] = []
        if let judge = request.judgeSource {
            let candidates = usable
            var attempt = 0
            while true {
                (usable, standby, parked) = await Self.judged(candidates, judge: judge)
                if !usable.isEmpty { break }
                attempt += 1
                let delay = Duration.seconds(min(60, 5 * attempt))
                let reason =
                    "no source may be used over the links this job may use now ("
                    + parked.map { "\(RedactedURL.redact($0.source.url)): \($0.why)" }.joined(separator: "; ")
                    + "); waiting for a link change"
                if let stopped = await download.waitBeforeAsking(attempt: attempt, delay: delay, reason: reason) {
                    return stopped
                }
            }
            for aside in parked {
                download.sink.yield(
                    .warning(
                        "Not using \(RedactedURL.redact(aside.source.url)) now: \(aside.why); it joins when that changes."
                    ))
            }
        }
        let directory = try OutputDirectory.open(holding: destination, identity: request.identity)
        let names = OutputNames(destination: destination)
        if directory.exists(names.final) && !request.force {
            throw TransferError(
                .destinationExists,
                "\(destination) already exists; pass --force to overwrite it or choose another path with -o.")
        }
        try directory.checkWritable()

        // Which sources agree on the file: the first `maxSources` that answer, of at most four times as many.
        // When none answers and every failure may pass (no connection, a 5xx, a timeout), they are asked again
        // as a single-source download retries (`--retries`; a daemon job without end), woken by a link change.
        var sources: [Probe] = []
        var next = 0
        var attempt = 0
        while true {
            sources = []
            next = 0
            while next < usable.count, next < 4 * MirrorSet.maxSources,
                sources.filter({ $0.problem == nil }).count < MirrorSet.maxSources
            {
                let batch = Array(usable[next..<min(usable.count, next + MirrorSet.maxSources)])
                next += batch.count
                sources += await probe(batch)
            }
            guard sources.allSatisfy({ $0.problem != nil && $0.transient }) else { break }
            attempt += 1
            guard let delay = download.retry.delay(attempt: attempt, retryAfter: nil, jitter: .random(in: 0..<1))
            else { break }
            let reason =
                "no source answered ("
                + sources.map { "\($0.display): \(Self.clause($0.problem ?? ""))" }.joined(separator: "; ") + ")"
            if let stopped = await download.waitBeforeAsking(attempt: attempt, delay: delay, reason: reason) {
                return stopped
            }
        }
        if next < usable.count {
            download.sink.yield(
                .warning("Using \(next) of the \(usable.count) sources given (the first that answered)."))
        }
        let known = Set(sources.map(\.url) + usable.map(\.url))
        let duplicates = sources.flatMap { probe in
            // RFC 6249: a server's mirrors count only with the file's digest (its own, or one the download has),
            // which then checks them; a duplicate never goes from https to http: the server's word does not lower
            // the download's security.
            (probe.digests.isEmpty && set.hashes.isEmpty && set.pieces == nil ? [] : probe.duplicates).filter {
                !probe.url.lowercased().hasPrefix("https://") || $0.url.lowercased().hasPrefix("https://")
            }
        }.filter { !known.contains($0.url) }
        let answered = sources.filter { $0.problem == nil }.count
        if !duplicates.isEmpty, answered < MirrorSet.maxSources {
            var extra: [MirrorSet.Source] = []
            for d in duplicates where !extra.contains(where: { $0.url == d.url }) && DownloadURL.problem(d.url) == nil {
                extra.append(MirrorSet.Source(url: d.url, priority: d.priority, location: d.location))
            }
            // Judged as the given sources were: refused ones are left out, the unpreferred stand by.
            if let judge = request.judgeSource {
                let (kept, more, no) = await Self.judged(extra, judge: judge)
                extra = kept
                standby.merge(more) { first, _ in first }
                parked += no
                for aside in no {
                    download.sink.yield(
                        .warning(
                            "Not using \(RedactedURL.redact(aside.source.url)) now: \(aside.why); it joins when that changes."
                        ))
                }
            }
            sources += await probe(Array(extra.prefix(MirrorSet.maxSources - answered)))
        }
        let total = try agree(&sources, size: set.size, hashes: set.hashes)
        for (kind, digest) in sources.compactMap({ $0.problem == nil ? $0.digests : nil }).flatMap({ $0 })
        where set.hashes[kind] == nil {
            set.hashes[kind] = digest
        }
        // A file the sources describe otherwise than `--sha256` can only fail one of the two checks: said now,
        // before any byte.
        if let expected = request.expectedSHA256?.lowercased(), let said = set.hashes[.sha256],
            PieceRecord.hex(said) != expected
        {
            throw TransferError(
                .checksumMismatch,
                "The sources give the file's sha-256 as \(PieceRecord.hex(said)), not the expected \(expected); nothing was downloaded. Check the checksum, the Metalink file or the URLs."
            )
        }
        for i in sources.indices { sources[i].standby = standby[sources[i].source.url] }
        let live = Array(sources.filter { $0.problem == nil }.prefix(MirrorSet.maxSources))
        for waiting in live where waiting.standby != nil && live.contains(where: { $0.standby == nil }) {
            download.sink.yield(
                .warning(
                    "\(waiting.display) stands by (\(Self.clause(waiting.standby ?? ""))): it takes over if the preferred sources are dropped."
                ))
        }
        for dropped in sources where dropped.problem != nil {
            download.sink.yield(.warning("Not using \(dropped.display): \(Self.clause(dropped.problem ?? ""))."))
            // Listed with the others (`status`, the sources event), with why.
            refused.append(
                SourceReport(
                    url: dropped.display, bytes: 0, dropped: dropped.problem,
                    proxy: clients.proxy(for: dropped.url)?.description))
        }
        guard !live.isEmpty else {
            throw TransferError(
                .noSources,
                "No source answered for the file: "
                    + sources.map { "\($0.display): \(Self.clause($0.problem ?? ""))" }.joined(separator: "; ")
                    + ". Check the URLs, or try again later.")
        }
        if let admit = request.admitTotal, !(await admit(total)) { return .paused }

        // The pieces and how each is checked.
        let check: PieceCheck
        let pieceLength: Int64
        if let pieces = set.pieces {
            let count = total == 0 ? 0 : Int((total - 1) / pieces.length) + 1
            guard pieces.hashes.count == count else {
                throw TransferError(
                    .metalink,
                    "The Metalink file has \(pieces.hashes.count) piece hashes, but \(total) bytes in pieces of \(pieces.length) make \(count); get a new Metalink file."
                )
            }
            check = .hashes(pieces)
            pieceLength = pieces.length
        } else {
            check = .crc32c
            pieceLength = Self.defaultPieceLength(total: total)
        }
        let identity =
            set.hashes[.sha256].map { "sha-256:" + PieceRecord.hex($0) }
            ?? set.hashes[.sha1].map { "sha-1:" + PieceRecord.hex($0) } ?? "size:\(total)"
        let partial = try openPartial(directory, names)
        defer { close(partial.fd) }
        var verified: [Bool] = []
        var crcs: [UInt32] = []
        var written: [Range<Int64>] = []
        // Keyed by the URL as the record keeps it: no password, no presigned signature (`RedactedURL.redact`).
        let validators = Dictionary(
            live.map { (RedactedURL.redact($0.url), Self.validatorText($0.validators)) },
            uniquingKeysWith: { (a: String, _: String) in a })
        // The earlier run's record, when it is for this file, these pieces and this check.
        let found = partial.created ? nil : PieceRecord.read(directory, names.pieceRecord)
        var record = found.flatMap { r in
            r.total == total && r.pieceLength == pieceLength && r.check == check.name && r.identity == identity
                ? r : nil
        }
        // A partial file left with no usable record starts over: said, not silent.
        if !partial.created, record == nil {
            let why =
                found != nil
                ? "its record is for another download (another length, piece length, check or digest)"
                : directory.exists(names.pieceRecord)
                    ? "its record \(directory.display(names.pieceRecord)) is damaged, cut short or not this program's"
                    : "it has no record of its pieces"
            download.sink.yield(
                .warning("Not using the partial file \(directory.display(names.mirrorPartial)): \(why); starting over.")
            )
        }
        if let found = record, case .crc32c = check {
            // Without piece hashes the pieces are the sources' bytes: a source that says another version now, or
            // no source of the earlier run answering, means the partial cannot be trusted.
            // Records written before 2026-11-27 keep each URL whole: read as this run writes them.
            let earlier = Dictionary(
                found.sources.map { (RedactedURL.redact($0.key), $0.value) },
                uniquingKeysWith: { (a: String, _: String) in a })
            let recorded = { (url: String) in earlier[RedactedURL.redact(url)] }
            let known = live.filter { recorded($0.url) != nil }
            let changed = known.first { recorded($0.url) != validators[RedactedURL.redact($0.url)] }
            if let changed {
                download.sink.yield(
                    .warning(
                        "\(changed.display) has another version of the file than the partial came from (its ETag or Last-Modified changed): starting over."
                    ))
                record = nil
            } else if known.isEmpty {
                download.sink.yield(
                    .warning(
                        "None of the sources that answered is one the partial came from, and without piece hashes it cannot be checked: starting over."
                    ))
                record = nil
            }
        }
        // The space the rest needs, as a single-source download checks it.
        let have =
            record.map { r in
                Int64(r.verified.filter { $0 }.count) * pieceLength
                    + r.written.reduce(Int64(0)) { $0 + Int64($1.range.count) }
            } ?? 0
        if let problem = DownloadRun.admissionProblem(request, total: total, have: min(total, have)) {
            if partial.created { try? directory.remove(names.mirrorPartial) }
            throw problem
        }
        if let record {
            // A pause or a cancel while a large partial file is checked ends the check; the record stays as it was.
            let (fd, download) = (partial.fd, download)
            let checked = await OffThePool.run { [self] in
                recheck(record, fd: fd, check: check, stop: { download.pendingStop != nil })
            }
            guard let checked else {
                if download.pendingStop == .cancel {
                    try? directory.remove(names.mirrorPartial)
                    try? directory.remove(names.pieceRecord)
                    return .cancelled
                }
                let progress = DownloadProgress(
                    bytesDone: min(total, have), totalBytes: total, bytesFetched: 0, bytesPerSecond: 0,
                    activeSegments: 0, discardedBytes: 0)
                download.setPausedProgress(progress)
                download.sink.yield(.paused(progress))
                return .paused
            }
            (verified, crcs) = checked
            let kept = verified.filter { $0 }.count
            let claimed = record.verified.filter { $0 }.count
            if kept < claimed {
                download.sink.yield(
                    .warning(
                        "\(claimed - kept) piece(s) of the partial file failed their check; they are fetched again."))
            }
            // Pieces left part way: the bytes written that still match the CRC-32C the record gives them.
            written = record.written.filter { PieceCheck.crc32c(fd: partial.fd, range: $0.range) == $0.crc }.map(
                \.range)
            if written.count < record.written.count {
                download.sink.yield(
                    .warning(
                        "\(record.written.count - written.count) part(s) of pieces left part way failed their check; they are fetched again."
                    ))
            }
        } else if !partial.created {
            guard ftruncate(partial.fd, 0) == 0 else {
                throw FileIO.error("empty \(directory.display(names.mirrorPartial))")
            }
        }
        guard ftruncate(partial.fd, off_t(total)) == 0 else {
            throw FileIO.error("size \(directory.display(names.mirrorPartial))")
        }
        let board = PieceBoard(total: total, pieceLength: pieceLength, verified: verified, written: written)
        let resumed = board.verifiedBytes + board.carriedBytes
        let fetch = MirrorFetch(
            run: self, sources: live, parked: parked, notUsed: refused, board: board, fd: partial.fd, check: check,
            crcs: crcs,
            record: { verified, crcs, written in
                PieceRecord(
                    total: total, pieceLength: pieceLength, check: check.name, identity: identity, verified: verified,
                    crcs: crcs, sources: validators, written: written)
            }, directory: directory, names: names, resumed: resumed)
        download.sink.yield(.started(totalBytes: total, resumedBytes: resumed, segments: fetch.workerCount))
        let end: MirrorFetch.End
        do throws(TransferError) {
            end = try await fetch.run()
        } catch {
            try? fetch.saveRecord()
            download.sink.yield(.sources(fetch.reports(), final: true))
            throw error
        }
        switch end {
        case .stopped(.pause):
            try fetch.saveRecord()
            download.sink.yield(.sources(fetch.reports(), final: true))
            download.sink.yield(.paused(fetch.progress()))
            download.setPausedProgress(fetch.progress())
            return .paused
        case .stopped(.cancel):
            try? directory.remove(names.mirrorPartial)
            try? directory.remove(names.pieceRecord)
            return .cancelled
        case .complete:
            break
        }
        download.sink.yield(.sources(fetch.reports(), final: true))
        return try finish(
            fetch: fetch, fd: partial.fd, set: set, total: total, resumed: resumed, directory: directory, names: names,
            destination: destination)
    }

    /// Checks the whole file against every digest known, then syncs and renames.
    func finish(
        fetch: MirrorFetch, fd: Int32, set: MirrorSet, total: Int64, resumed: Int64, directory: OutputDirectory,
        names: OutputNames, destination: String
    ) throws(TransferError) -> DownloadOutcome {
        // A file whose every piece matched its sha-256 is the file the piece hashes describe: it is read again
        // only for a digest asked for (`--sha256`, `--print-sha256`). With sha-1 pieces, or none, the whole
        // file's digests are checked when known.
        let piecesProve = set.pieces?.kind == .sha256
        let wantSHA256 = request.wantsSHA256 || (set.hashes[.sha256] != nil && !piecesProve)
        let wantSHA1 = set.hashes[.sha1] != nil && set.hashes[.sha256] == nil && !piecesProve
        var sha256 = wantSHA256 ? SHA256() : nil
        var sha1 = wantSHA1 ? Insecure.SHA1() : nil
        if sha256 != nil || sha1 != nil {
            guard
                PieceCheck.read(
                    fd: fd, range: 0..<total,
                    into: { raw in
                        sha256?.update(bufferPointer: raw)
                        sha1?.update(bufferPointer: raw)
                    })
            else { throw FileIO.error("read \(directory.display(names.mirrorPartial))") }
        }
        let digest = sha256.map { PieceRecord.hex(Array($0.finalize())) }
        var wrong: [String] = []
        if let digest, let expected = set.hashes[.sha256], PieceRecord.hex(expected) != digest {
            wrong.append("its sha-256 is \(digest), the sources say \(PieceRecord.hex(expected))")
        }
        if let sha1, let expected = set.hashes[.sha1] {
            let got = PieceRecord.hex(Array(sha1.finalize()))
            if got != PieceRecord.hex(expected) {
                wrong.append("its sha-1 is \(got), the sources say \(PieceRecord.hex(expected))")
            }
        }
        if let digest, let expected = request.expectedSHA256?.lowercased(), expected != digest {
            wrong.append("its sha256 is \(digest), not the expected \(expected)")
        }
        guard wrong.isEmpty else {
            try? directory.remove(names.mirrorPartial)
            try? directory.remove(names.pieceRecord)
            throw TransferError(
                .checksumMismatch,
                "The assembled file is not the one asked for: " + wrong.joined(separator: "; ")
                    + ". The partial file was removed; check the checksum, the sources or the Metalink file."
            )
        }
        guard fdatasync(fd) == 0 else { throw FileIO.error("write \(directory.display(names.mirrorPartial))") }
        let mode = 0o666 & ~FileIO.processUmask
        try directory.publish(fd, names.mirrorPartial, as: names.final, mode: mode, replace: request.force)
        try? directory.remove(names.pieceRecord)
        directory.sync()
        let counts = fetch.counts()
        // Bytes the partial held that failed with their piece were fetched again: not resumed, nor refetched.
        let kept = max(0, resumed - counts.lostResumed)
        return .completed(
            DownloadResult(
                path: destination, sha256: request.wantsSHA256 ? digest : nil, totalBytes: total,
                bytesFetched: counts.fetched,
                refetchedBytes: DownloadResult.refetched(
                    fetched: counts.fetched, discarded: counts.discarded, total: total, resumed: kept),
                resumedBytes: kept, discardedBytes: counts.discarded))
    }

    /// The pieces of `record` that still pass their check in the partial file; nil when `stop`, asked before each
    /// piece, said to end the check (a pause or a cancel).
    func recheck(_ record: PieceRecord, fd: Int32, check: PieceCheck, stop: () -> Bool = { false }) -> (
        [Bool], [UInt32]
    )? {
        let board = PieceBoard(total: record.total, pieceLength: record.pieceLength)
        var verified = record.verified
        var crcs = record.crcs
        for piece in 0..<verified.count where verified[piece] {
            if stop() { return nil }
            let range = board.range(ofPiece: piece)
            switch check {
            case .hashes:
                verified[piece] = check.matches(fd: fd, piece: piece, range: range)
            case .crc32c:
                let digest = check.digest(fd: fd, range: range)
                let recorded = piece < crcs.count ? crcs[piece] : 0
                verified[piece] = digest == withUnsafeBytes(of: recorded.bigEndian) { Array($0) }
            }
        }
        if case .crc32c = check, crcs.count != verified.count { crcs = Array(repeating: 0, count: verified.count) }
        return (verified, crcs)
    }

    // MARK: - Sources

    /// A source's validators as its record keeps them.
    static func validatorText(_ v: Validators) -> String { "\(v.etag ?? "")\t\(v.lastModified ?? "")" }

    /// What the first-byte request of one source found.
    struct Probe: Sendable {
        var source: MirrorSet.Source
        /// After redirects.
        var url: String
        var display: String
        var total: Int64?
        var validators = Validators(etag: nil, lastModified: nil)
        var duplicates: [SourceHeaders.Duplicate] = []
        var digests: [Metalink.HashKind: [UInt8]] = [:]
        /// Why it is not used; nil when it is.
        var problem: String?
        /// Why it stands by (`SourceUse.standby`): it takes work only while no other source is left.
        var standby: String?
        /// Whether `problem` may pass by itself (no connection, a timeout, a 5xx): worth asking again.
        var transient = false
        /// Whether `problem` is that the source, or where it redirects, is reached over a link the job may not
        /// use now (`TransferError.linkNotAllowed`).
        var linkRefused = false
    }

    /// A source the caller refuses now (`SourceUse.refuse`), and why.
    struct Parked: Sendable {
        var source: MirrorSet.Source
        var why: String
    }

    /// The sources `judge` lets the download use, why each of the others stands by (by URL), and the refused
    /// ones with why.
    static func judged(_ sources: [MirrorSet.Source], judge: @escaping @Sendable (String) async -> SourceUse) async -> (
        [MirrorSet.Source], [String: String], [Parked]
    ) {
        // Asked at once: each may wait on the resolver.
        let uses = await withTaskGroup(of: (Int, SourceUse).self) { group in
            for (i, source) in sources.enumerated() { group.addTask { (i, await judge(source.url)) } }
            var out = [SourceUse](repeating: .use, count: sources.count)
            for await (i, use) in group { out[i] = use }
            return out
        }
        var kept: [MirrorSet.Source] = []
        var standby: [String: String] = [:]
        var refused: [Parked] = []
        for (source, use) in zip(sources, uses) {
            switch use {
            case .use: kept.append(source)
            case .standby(let why):
                kept.append(source)
                standby[source.url] = why
            case .refuse(let why):
                refused.append(Parked(source: source, why: why))
            }
        }
        return (kept, standby, refused)
    }

    /// Asks every source for byte 0 at once.
    /// A reason as a clause inside a sentence: without its own closing period.
    static func clause(_ reason: String) -> String {
        reason.last == "." ? String(reason.dropLast()) : reason
    }

    func probe(_ sources: [MirrorSet.Source]) async -> [Probe] {
        await withTaskGroup(of: (Int, Probe).self) { group in
            for (index, source) in sources.enumerated() {
                group.addTask { (index, await probe(source)) }
            }
            var out: [(Int, Probe)] = []
            for await result in group { out.append(result) }
            return out.sorted { $0.0 < $1.0 }.map(\.1)
        }
    }

    func probe(_ source: MirrorSet.Source) async -> Probe {
        var found = Probe(source: source, url: source.url, display: RedactedURL.redact(source.url))
        let answer: RequestSender.Answer
        do {
            answer = try await sender(for: source.url).get(source.url, range: "bytes=0-0", validators: nil)
        } catch {
            found.problem = error.message
            // A redirect refused by policy will not pass; a failed connection may.
            found.transient = error.code == .retriesExhausted
            found.linkRefused = error.code == .linkNotAllowed
            return found
        }
        found.url = answer.url
        let response = answer.response
        let headers = response.headers
        found.duplicates = answer.announced.duplicates
        found.digests = answer.announced.digests
        found.validators = Validators(
            etag: headers.first(name: "ETag"), lastModified: headers.first(name: "Last-Modified"))
        let status = Int(response.status.code)
        switch status {
        case 206:
            guard let header = headers.first(name: "Content-Range"), let range = ContentRange(header: header),
                range.first == 0, let total = range.total, total >= 0, total <= ObjectLimits.maxBytes
            else {
                found.problem = "its answer to a range request has no usable Content-Range"
                return found
            }
            found.total = total
        case 200 where headers.first(name: "Content-Length") == "0":
            found.total = 0
        case 200:
            found.problem = "it does not answer range requests"
        case 416:
            if let header = headers.first(name: "Content-Range"), ContentRange.unsatisfiedTotal(header: header) == 0 {
                found.total = 0
            } else {
                found.problem = "it refused a range request for the first byte (416)"
            }
        default:
            found.problem = answered(status, url: source.url)
            found.transient = [408, 425, 429].contains(status) || (500...599).contains(status)
        }
        return found
    }

    /// The file's length: the Metalink file's, else the one most sources give (the first source's on a tie).
    /// A source that says another length, or whose digest headers name another file, is marked with why.
    func agree(_ sources: inout [Probe], size: Int64?, hashes: [Metalink.HashKind: [UInt8]] = [:])
        throws(TransferError) -> Int64
    {
        var counts: [Int64: Int] = [:]
        for s in sources where s.problem == nil { if let t = s.total { counts[t, default: 0] += 1 } }
        let first = sources.first { $0.problem == nil && $0.total != nil }?.total
        guard
            let total = size
                ?? counts.max(by: { a, b in a.value < b.value || (a.value == b.value && b.key == first) })?.key
        else {
            throw TransferError(
                .noSources,
                "No source answered for the file: "
                    + sources.map { "\($0.display): \(Self.clause($0.problem ?? "no length"))" }.joined(
                        separator: "; ") + ". Check the URLs, or try again later.")
        }
        for i in sources.indices where sources[i].problem == nil {
            if let t = sources[i].total, t != total {
                sources[i].problem =
                    "it has \(t) bytes where \(size == nil ? "the other sources have" : "the Metalink file says") \(total)"
            }
        }
        // Digest headers: the Metalink file's digest decides, else the one most sources give; on a tie nobody
        // is believed (and the digest is not used).
        for kind in Metalink.HashKind.allCases {
            var votes: [[UInt8]: Int] = [:]
            for s in sources where s.problem == nil { if let d = s.digests[kind] { votes[d, default: 0] += 1 } }
            let best = votes.max { $0.value < $1.value }
            let tie = best.map { b in votes.filter { $0.value == b.value }.count > 1 } ?? false
            let expected = hashes[kind] ?? (tie ? nil : best?.key)
            for i in sources.indices where sources[i].problem == nil {
                guard let d = sources[i].digests[kind] else { continue }
                if let expected, d != expected {
                    sources[i].problem =
                        "its \(kind.rawValue) digest header names another file than \(hashes[kind] == nil ? "most sources'" : "the digest the download was given (a Metalink file's, or the one its URL's server announced)")"
                } else if expected == nil {
                    sources[i].digests[kind] = nil
                }
            }
        }
        return total
    }

    /// Fetches and reads a Metalink file (at most `Metalink.maxBytes`); a local one (an absolute path) is read
    /// with the identity's rights.
    func readMetalink(_ location: String) async throws(TransferError) -> Metalink {
        if location.hasPrefix("/") {
            let bytes = try request.identity.perform { () throws(TransferError) -> [UInt8] in
                try Metalink.readFile(atPath: location)
            }
            return try Metalink.parse(bytes, source: location)
        }
        if let problem = DownloadURL.problem(location) { throw TransferError(.invalidURL, problem + ".") }
        let answer = try await sender(for: location).get(location, range: nil, validators: nil)
        let status = Int(answer.response.status.code)
        guard status == 200 else {
            throw TransferError(
                .httpStatus, "The Metalink file \(RedactedURL.redact(location)) answered HTTP \(status).")
        }
        var bytes: [UInt8] = []
        do {
            for try await buffer in answer.response.body {
                guard bytes.count + buffer.readableBytes <= Metalink.maxBytes else {
                    throw TransferError(
                        .metalink,
                        "\(RedactedURL.redact(location)) is larger than \(Metalink.maxBytes >> 20) MiB; it is not a Metalink file."
                    )
                }
                bytes += buffer.readableBytesView
            }
        } catch let error as TransferError {
            throw error
        } catch {
            throw TransferError(
                .retriesExhausted, "Reading the Metalink file \(RedactedURL.redact(location)) failed: \(error).")
        }
        return try Metalink.parse(bytes, source: RedactedURL.redact(location))
    }

    // MARK: - Files

    func openPartial(_ directory: OutputDirectory, _ names: OutputNames) throws(TransferError) -> LockedPartial {
        try LockedPartial.open(names.mirrorPartial, of: names, in: directory, sink: download.sink)
    }
}

extension OutputNames {
    /// The partial file of a download from several sources (docs/mirrors.md).
    var mirrorPartial: String { final + ".mirror-part" }
    /// Its checkpoint: the pieces verified so far.
    var pieceRecord: String { final + ".mirror-part.pieces" }
}
