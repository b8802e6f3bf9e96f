import AsyncHTTPClient
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The fetch of a download from several sources (docs/mirrors.md). Each source has its own connections;
/// each takes spans of whole pieces from one `PieceBoard`, and when nothing is left to take, the span of a
/// source that would end far later is cut where it stands and finished by the faster one. A piece is
/// checked the moment its last byte is written: a bad one is fetched again from another source and the
/// source that sent it is dropped. A source that fails again and again, contradicts its own validator or
/// stalls is dropped with the reason; the run ends when every piece is verified.
final class MirrorFetch: Sendable {
    enum End: Sendable {
        case complete
        case stopped(Download.StopReason)
    }

    /// One source as the fetch sees it.
    struct Source: Sendable {
        var url: String
        var display: String
        var validators: Validators
        var bytes: Int64 = 0
        var dropped: String?
        var failures = 0
        /// Bytes of pieces it sent wrong, and how many times it sent each piece wrong (`State.goesAfterBadBytes`).
        var badBytes: Int64 = 0
        var badCopies: [Int: Int] = [:]
        var rate = RateEstimate()
        var lastByte: ContinuousClock.Instant?
        /// Why it takes work only while no other source is left (`SourceUse.standby`); nil: it takes work.
        var standby: String?
        /// Why the caller refuses it now (`SourceUse.refuse`: its link is not allowed): it takes no work, and
        /// joins once it is allowed and answers for the same file (`rejoin`); nil: it is in the download.
        var parked: String?
        /// The source as given, asked again when it joins.
        var given: MirrorSet.Source?
    }

    struct State {
        var board: PieceBoard
        var sources: [Source]
        var crcs: [UInt32]
        var fetched: Int64 = 0
        var discarded: Int64 = 0
        var written: Int64 = 0
        var rate = RateEstimate()
        var lastByte: [Int: ContinuousClock.Instant] = [:]
        var recordDirty = false
        /// Bytes the resumed partial held of pieces that then failed their check (fetched again).
        var lostResumed: Int64 = 0

        /// `source` sent `bytes` of `piece` wrong (nil: its part of a piece mixed from several sources). Returns nil
        /// when it stays, as the last source left, and may be asked for the piece again; else what to add to the
        /// reason it is dropped ("" while another source is left). The last source stays until it has sent one
        /// piece wrong `maxFailures` times, or pieces adding up to more than an eighth of the file (at least
        /// `maxFailures` pieces): every piece is checked, so nothing wrong is kept, and a cache or proxy on the way
        /// that spoiled a block often serves it right the next time, where dropping the last source ends the
        /// download.
        mutating func goesAfterBadBytes(_ source: Int, _ bytes: Int64, piece: Int?) -> String? {
            sources[source].badBytes += bytes
            var copies = 0
            if let piece {
                copies = (sources[source].badCopies[piece] ?? 0) + 1
                sources[source].badCopies[piece] = copies
            }
            guard !sources.indices.contains(where: { $0 != source && sources[$0].dropped == nil }) else { return "" }
            if copies >= MirrorFetch.maxFailures { return "; it sent that piece wrong \(copies) times" }
            let limit = max(board.total / 8, Int64(MirrorFetch.maxFailures) * board.pieceLength)
            if sources[source].badBytes > limit {
                return "; the pieces it sent wrong add up to more than an eighth of the file"
            }
            if let piece { board.forgive(source, piece: piece) }
            return nil
        }

        /// Takes off each source the bytes it wrote of a piece that is fetched again (`bySource`, the board's).
        mutating func forget(_ bySource: [Int: Int64]) {
            for (i, n) in bySource where sources.indices.contains(i) { sources[i].bytes -= n }
        }
    }

    /// A request with no byte for this long, while other sources deliver, is abandoned and its span taken.
    static let stallTime: Duration = .seconds(5)
    /// Failures in a row after which a source is dropped, while another one is left.
    static let maxFailures = 3
    /// The largest span one request asks for.
    static let maxSpan: Int64 = 16 << 20

    let run: MirrorRun
    let state: Mutex<State>
    let fd: Int32
    let check: PieceCheck
    let record: @Sendable ([Bool], [UInt32], [PieceRecord.Written]) -> PieceRecord
    let directory: OutputDirectory
    let names: OutputNames
    let resumed: Int64
    let connectionsPerSource: Int
    /// Sources that did not answer usably when the download began, listed in the reports as dropped.
    let notUsed: [SourceReport]
    /// How often a source set aside is judged again, besides at a link change (`Download.retryNow`).
    static let rejudgeEvery: Duration = .seconds(5)

    init(
        run: MirrorRun, sources: [MirrorRun.Probe], parked: [MirrorRun.Parked] = [], notUsed: [SourceReport] = [],
        board: PieceBoard, fd: Int32,
        check: PieceCheck, crcs: [UInt32],
        record: @escaping @Sendable ([Bool], [UInt32], [PieceRecord.Written]) -> PieceRecord,
        directory: OutputDirectory,
        names: OutputNames, resumed: Int64
    ) {
        self.run = run
        let list =
            sources.map {
                Source(
                    url: $0.url, display: $0.display, validators: $0.validators, standby: $0.standby, given: $0.source)
            }
            + parked.map {
                Source(
                    url: $0.source.url, display: RedactedURL.redact($0.source.url),
                    validators: Validators(etag: nil, lastModified: nil), parked: $0.why, given: $0.source)
            }
        self.notUsed = notUsed
        var crcs = crcs
        if case .crc32c = check, crcs.count != board.pieceCount { crcs = Array(repeating: 0, count: board.pieceCount) }
        state = Mutex(State(board: board, sources: list, crcs: crcs))
        self.fd = fd
        self.check = check
        self.record = record
        self.directory = directory
        self.names = names
        self.resumed = resumed
        // Four connections in all by default (`--segments`), at least one per source; shared by the sources
        // that take work first (a source standing by takes over another's share).
        let first = list.filter { $0.standby == nil && $0.parked == nil }.count
        let working = first > 0 ? first : list.filter { $0.parked == nil }.count
        connectionsPerSource = Self.share(of: run.request.segments ?? 4, among: working)
    }

    var download: Download { run.download }
    var request: DownloadRequest { run.request }
    var workerCount: Int { state.withLock { $0.sources.count } * connectionsPerSource }

    /// Bytes received, bytes thrown away, and bytes the resumed partial held that were fetched again.
    func counts() -> (fetched: Int64, discarded: Int64, lostResumed: Int64) {
        state.withLock { ($0.fetched, $0.discarded, $0.lostResumed) }
    }

    func progress() -> DownloadProgress {
        state.withLock { s in
            DownloadProgress(
                bytesDone: resumed - s.lostResumed + s.written, totalBytes: s.board.total, bytesFetched: s.fetched,
                bytesPerSecond: s.rate.perSecond, activeSegments: s.board.active.count, discardedBytes: s.discarded)
        }
    }

    func reports() -> [SourceReport] {
        state.withLock { s in
            let working = Self.working(s)
            return s.sources.indices.map { i in
                let source = s.sources[i]
                let aside = source.parked.map { "\(MirrorRun.clause($0)); it joins when that changes" }
                return SourceReport(
                    url: source.display, bytes: source.bytes, dropped: source.dropped,
                    standby: source.dropped == nil && !working.contains(i) ? aside ?? source.standby : nil,
                    proxy: run.clients.proxy(for: source.url)?.description)
            } + notUsed
        }
    }

    /// Writes the checkpoint: the partial file's data first, then the list of verified pieces and the bytes
    /// written of the others, each span with its CRC-32C as the partial file holds it.
    func saveRecord() throws(TransferError) {
        let (verified, crcs, spans) = state.withLock { s in
            s.recordDirty = false
            return (s.board.verified, s.crcs, s.board.writtenUnverified.prefix(PieceRecord.maxWritten))
        }
        guard fdatasync(fd) == 0 else { throw FileIO.error("write \(directory.display(names.mirrorPartial))") }
        let written = spans.compactMap { span -> PieceRecord.Written? in
            PieceCheck.crc32c(fd: fd, range: span).map { PieceRecord.Written(range: span, crc: $0) }
        }
        try record(verified, crcs, written).write(directory, names.pieceRecord)
    }

    private typealias Turn = WorkerTurn

    func run() async throws(TransferError) -> End {
        if state.withLock({ $0.board.isComplete }) { return .complete }
        let perSource = connectionsPerSource
        let count = state.withLock { $0.sources.count } * perSource
        let outcome = await download.runWorkers(
            count,
            tick: { ticks in
                self.download.sink.yield(.progress(self.progress()))
                if ticks % 10 == 0 {
                    if self.state.withLock({ $0.recordDirty }) { try? self.saveRecord() }
                    self.download.sink.yield(.sources(self.reports(), final: false))
                }
            },
            worker: { index in await self.worker(index / perSource, slot: index % perSource) })
        switch outcome {
        case .finished:
            download.sink.yield(.progress(progress()))
            let (complete, reasons) = state.withLock { s in
                (s.board.isComplete, s.sources.map { "\($0.display): \($0.dropped ?? "no piece left it may serve")" })
            }
            guard complete else {
                throw TransferError(
                    .noSources,
                    "Every source was dropped before the file was complete: " + reasons.joined(separator: "; ")
                        + ". The verified pieces are kept; run the command again, or add sources.")
            }
            return .complete
        case .stop(let reason): return .stopped(reason)
        case .failed(let error): throw error
        }
    }

    /// The bytes a request of `source` asks for: about two seconds at its rate, at most `maxSpan`, and no more
    /// than its share of what is left, so the sources end together; at least a piece, but for the last bytes:
    /// once a connection's share is under a piece, spans are that share (at least `minimumSpan`), so the last
    /// pieces are fetched by every connection at once and not by one while the others wait.
    private func span(for source: Int, _ s: State) -> (bytes: Int64, wholePieces: Bool) {
        let rate = s.sources[source].rate.estimate
        let share = s.board.pendingBytes / Int64(max(1, Self.working(s).count * connectionsPerSource))
        if share < s.board.pieceLength { return (max(Self.minimumSpan, share), false) }
        return (max(s.board.pieceLength, min(Self.maxSpan, Int64(rate * 2), share)), true)
    }

    /// The smallest span of the last bytes of a download.
    static let minimumSpan: Int64 = 64 << 10

    /// Connections per source when `connections` are shared by `sources`: at least one each.
    static func share(of connections: Int, among sources: Int) -> Int {
        max(1, (connections + max(1, sources) - 1) / max(1, sources))
    }

    /// The sources that take work now: every live source that does not stand by, or, when none is left, the
    /// live ones standing by.
    static func working(_ s: State) -> [Int] {
        let live = s.sources.indices.filter { s.sources[$0].dropped == nil && s.sources[$0].parked == nil }
        let first = live.filter { s.sources[$0].standby == nil }
        return first.isEmpty ? live : first
    }

    private enum Taken {
        case span(id: Int, range: Range<Int64>)
        /// Nothing to take now: ask again after this long.
        case wait(Duration)
        case done
    }

    private func take(_ source: Int, slot: Int) -> Taken {
        let now = ContinuousClock.now
        return state.withLock { s in
            guard s.sources[source].dropped == nil, !s.board.isComplete else { return .done }
            if s.sources[source].parked != nil { return .wait(.milliseconds(200)) }
            // Standing by while a preferred source is left.
            let working = Self.working(s)
            if s.sources[source].standby != nil, !working.contains(source) { return .wait(.milliseconds(200)) }
            // The download's connections shared by the sources working now: a source that joins takes its share
            // from the others' (their extra workers wait), one that is dropped leaves its share to them.
            if slot >= Self.share(of: request.segments ?? 4, among: working.count) { return .wait(.milliseconds(200)) }
            let (maxBytes, wholePieces) = span(for: source, s)
            if let taken = s.board.take(source: source, maxBytes: maxBytes, wholePieces: wholePieces, now: now) {
                return .span(id: taken.id, range: taken.range)
            }
            var rates: [Int: Double] = [:]
            for (i, src) in s.sources.enumerated() {
                let fresh = src.lastByte.map { now - $0 < .seconds(2) } ?? false
                // A source's own rate is what it can do (it may be idle now); another's counts only while it delivers.
                rates[i] = fresh || i == source ? src.rate.estimate : 0
            }
            if let stolen = s.board.steal(source: source, rates: rates, now: now) {
                return .span(id: stolen.id, range: stolen.range)
            }
            // Nothing this source may take now. When no request is in flight and nothing pending is for it,
            // it has no part left in this download.
            if s.board.active.isEmpty && !s.board.hasWork(for: source) { return .done }
            // The end of the download: a request may end, or become worth stealing (`PieceBoard.steal`), any moment.
            return .wait(.milliseconds(50))
        }
    }

    private func worker(_ source: Int, slot: Int) async -> Turn {
        while !Task.isCancelled {
            // A source set aside: its first worker asks whether it may join; the others wait for that.
            if slot == 0,
                let given = state.withLock({ $0.sources[source].parked == nil ? nil : $0.sources[source].given })
            {
                if let turn = await rejoin(source, given) { return turn }
                continue
            }
            let id: Int
            let range: Range<Int64>
            switch take(source, slot: slot) {
            case .done: return .finished
            case .wait(let pause):
                do { try await LoopExecutor.sleep(for: pause) } catch { return .finished }
                continue
            case .span(let taken, let r):
                id = taken
                range = r
            }
            let result = await fetchWatched(id: id, range: range, source: source)
            state.withLock { s in
                // The bytes written of a piece to be fetched whole that this request left part way are dropped.
                guard let (_, dropped, bySource) = s.board.finish(id) else { return }
                s.written -= dropped
                s.discarded += dropped
                s.forget(bySource)
            }
            switch result {
            case .done:
                state.withLock { $0.sources[source].failures = 0 }
            case .fatal(let error):
                return .failed(error)
            case .drop(let reason):
                drop(source, reason)
                return .finished
            case .park(let why):
                park(source, why)
            case .again(let reason, let progressed):
                if Task.isCancelled { return .finished }
                let (failures, others) = state.withLock { s -> (Int, Int) in
                    if progressed { s.sources[source].failures = 0 }
                    s.sources[source].failures += 1
                    let others = s.sources.indices.filter { $0 != source && s.sources[$0].dropped == nil }.count
                    return (s.sources[source].failures, others)
                }
                if others > 0, failures >= Self.maxFailures {
                    drop(source, "\(failures) requests in a row failed, the last: \(reason)")
                    return .finished
                }
                guard let delay = download.retry.delay(attempt: failures, retryAfter: nil, jitter: .random(in: 0..<1))
                else {
                    if others > 0 {
                        drop(source, reason)
                        return .finished
                    }
                    return .failed(
                        TransferError(
                            .retriesExhausted,
                            GiveUpText.retriesExhausted(
                                retries: failures - 1, reason: reason, bytesDone: progress().bytesDone)))
                }
                download.sink.yield(
                    .retrying(attempt: failures, delay: delay, reason: "\(displayName(source)): \(reason)"))
                do { try await download.wake.sleep(for: delay) } catch { return .finished }
            }
        }
        return .finished
    }

    private func displayName(_ source: Int) -> String { state.withLock { $0.sources[source].display } }

    /// One turn of a source set aside: waits for a link change or `rejudgeEvery`, then asks the caller again;
    /// once the source is allowed, asks it for the first byte, and it joins when it has the file's length (its
    /// own validators kept for its If-Match). Nil: go on (joined, or still aside); a turn: this worker is done.
    private func rejoin(_ source: Int, _ given: MirrorSet.Source) async -> Turn? {
        // In short sleeps, so the end of the download is not held up; a link change (`wakes`) ends the wait.
        let begun = ContinuousClock.now
        let wakes = download.wake.wakes
        while ContinuousClock.now - begun < Self.rejudgeEvery, download.wake.wakes == wakes {
            if state.withLock({ $0.board.isComplete || $0.sources[source].dropped != nil }) { return .finished }
            do { try await download.wake.sleep(for: .milliseconds(250)) } catch { return .finished }
        }
        if state.withLock({ $0.board.isComplete || $0.sources[source].dropped != nil }) { return .finished }
        guard let judge = request.judgeSource else {
            state.withLock { $0.sources[source].parked = nil }
            return nil
        }
        var standby: String?
        switch await judge(given.url) {
        case .refuse(let why):
            state.withLock { $0.sources[source].parked = why }
            return nil
        case .standby(let why): standby = why
        case .use: break
        }
        let probe = await run.probe(given)
        let total = state.withLock { $0.board.total }
        if let problem = probe.problem {
            // Asked again at the next turn when it may pass (no connection yet on the new link, a redirect to a
            // link still refused).
            if probe.linkRefused {
                state.withLock { $0.sources[source].parked = Self.refusal(problem) }
            } else if !probe.transient {
                drop(source, problem)
            }
            return nil
        }
        let earlier = state.withLock { $0.sources[source].validators }
        if earlier.etag != nil || earlier.lastModified != nil, !earlier.matches(probe.validators) {
            drop(source, "its copy changed while it was set aside (its ETag or Last-Modified changed)")
            return .finished
        }
        guard probe.total == total else {
            drop(source, "it has \(probe.total.map(String.init) ?? "no") bytes where the other sources have \(total)")
            return .finished
        }
        let display = state.withLock { s -> String in
            s.sources[source].url = probe.url
            s.sources[source].validators = probe.validators
            s.sources[source].standby = standby
            s.sources[source].parked = nil
            return s.sources[source].display
        }
        download.sink.yield(.warning("Using \(display) now: it may be reached over the links this job may use."))
        return nil
    }

    /// `source` sent bytes of a piece wrong (`why`): dropped, with `goes` added to the reason, unless it stays
    /// as the last source left (`goes` nil, `State.goesAfterBadBytes`).
    private func reject(_ source: Int, _ why: String, goes: String?) {
        if let goes {
            drop(source, why + goes)
        } else {
            let display = state.withLock { $0.sources[source].display }
            download.sink.yield(
                .warning("The \(why); it came from \(display), the last source left, and is fetched from it again."))
        }
    }

    /// Drops `source` for the rest of the run, saying why.
    private func drop(_ source: Int, _ reason: String) {
        let display = state.withLock { s -> String? in
            guard s.sources[source].dropped == nil else { return nil }
            s.sources[source].dropped = reason
            return s.sources[source].display
        }
        guard let display else { return }
        // Some reasons are whole sentences already (a server's own text): one period, not two.
        let stop = reason.last == "." ? "" : "."
        download.sink.yield(.warning("Dropping the source \(display): \(reason)\(stop)"))
    }

    enum Fetched: Sendable {
        case done
        case again(reason: String, progressed: Bool)
        case drop(String)
        /// Refused over a link the job may not use now (`SourceUse.refuse`): the source is set aside.
        case park(String)
        case fatal(TransferError)
    }

    /// Why a request was not sent (`TransferError.linkNotAllowed`: "Not asking URL: why."), without the URL.
    static func refusal(_ message: String) -> String {
        guard message.hasPrefix("Not asking "), let colon = message.range(of: ": ") else { return message }
        return MirrorRun.clause(String(message[colon.upperBound...]))
    }

    /// Sets `source` aside (`Source.parked`): its first worker asks again whether it may join.
    private func park(_ source: Int, _ why: String) {
        let display = state.withLock { s -> String? in
            guard s.sources[source].dropped == nil, s.sources[source].parked == nil else { return nil }
            s.sources[source].parked = why
            return s.sources[source].display
        }
        guard let display else { return }
        download.sink.yield(.warning("Not using \(display) now: \(why); it joins when that changes."))
    }

    /// `fetch`, abandoned when its span was taken whole by another source or it stalls while others deliver.
    private func fetchWatched(id: Int, range: Range<Int64>, source: Int) async -> Fetched {
        await withTaskGroup(of: Fetched?.self) { group in
            group.addTask { await self.fetch(id: id, range: range, source: source) }
            group.addTask {
                let begun = ContinuousClock.now
                var wakes = self.download.wake.wakes
                while !Task.isCancelled {
                    try? await LoopExecutor.sleep(for: .milliseconds(250))
                    // A link change (`Download.retryNow`): a source now reached over a link the job may not use
                    // stops at once, its request abandoned.
                    if let judge = self.request.judgeSource, self.download.wake.wakes != wakes {
                        wakes = self.download.wake.wakes
                        let url = self.state.withLock { $0.sources[source].url }
                        if case .refuse(let why) = await judge(url) { return .park(why) }
                    }
                    let now = ContinuousClock.now
                    let verdict = self.state.withLock { s -> Fetched? in
                        guard s.board.isOpen(id) else { return .done }
                        let last = s.lastByte[id] ?? begun
                        guard now - last >= Self.stallTime else { return nil }
                        let othersDeliver = s.sources.indices.contains { i in
                            i != source && s.sources[i].lastByte.map { now - $0 < .seconds(1) } ?? false
                        }
                        return othersDeliver
                            ? .again(
                                reason:
                                    "no byte for \(Int(Self.stallTime.secondsDouble)) s while other sources deliver",
                                progressed: false)
                            : nil
                    }
                    if let verdict { return verdict }
                }
                return nil
            }
            var result: Fetched = .done
            while let next = await group.next() {
                if let next {
                    result = next
                    break
                }
            }
            group.cancelAll()
            self.state.withLock { _ = $0.lastByte.removeValue(forKey: id) }
            return result
        }
    }

    /// One request for `range` from `source`.
    private func fetch(id: Int, range: Range<Int64>, source: Int) async -> Fetched {
        let (url, validators) = state.withLock { ($0.sources[source].url, $0.sources[source].validators) }
        let answer: RequestSender.Answer
        do {
            answer = try await run.sender(for: url).get(
                url, range: "bytes=\(range.lowerBound)-\(range.upperBound - 1)", validators: validators)
        } catch {
            if Task.isCancelled { return .done }
            // A redirect to a host over a link the job may not use: this source is done.
            // Refused over a link the job may not use now (the source's, or a redirect's): set aside until allowed.
            if error.code == .linkNotAllowed { return .park(Self.refusal(error.message)) }
            return .again(reason: error.message, progressed: false)
        }
        let response = answer.response
        let status = Int(response.status.code)
        switch status {
        case 206:
            break
        case 200:
            return .drop("it answered a range request with the whole file (HTTP 200)")
        case 412:
            return .drop("its copy changed since the download began (HTTP 412 to If-Match)")
        case 416:
            return .drop("it refused bytes \(range.lowerBound)-\(range.upperBound - 1) (HTTP 416): its copy is shorter")
        case 408, 425, 429, 500...599:
            return .again(reason: run.answered(status, url: url), progressed: false)
        default:
            return .drop(run.answered(status, url: url))
        }
        let total = state.withLock { $0.board.total }
        let got = Validators(
            etag: response.headers.first(name: "ETag"), lastModified: response.headers.first(name: "Last-Modified"))
        guard validators.matches(got) else {
            return .drop("its copy changed during the download (its ETag or Last-Modified changed)")
        }
        guard let header = response.headers.first(name: "Content-Range"), let answered = ContentRange(header: header),
            answered.first == range.lowerBound, answered.last < range.upperBound, answered.total == total
        else {
            return .drop(
                "its 206 is not for the bytes asked (Content-Range \(response.headers.first(name: "Content-Range") ?? "missing"))"
            )
        }
        let end = answered.last + 1
        var position = range.lowerBound
        var stream = state.withLock { PieceStream(check: check, pieceLength: $0.board.pieceLength, total: total) }
        var speed = LowSpeedWindow(limit: request.lowSpeedLimit, window: request.lowSpeedTime, start: .now)
        do {
            for try await buffer in response.body {
                let n = buffer.readableBytes
                request.onBytes?(n)
                let now = ContinuousClock.now
                try await download.limiter.wait(for: n)
                let reserved = state.withLock { s -> Range<Int64> in
                    s.fetched += Int64(n)
                    s.rate.add(n)
                    s.sources[source].rate.add(n)
                    s.sources[source].lastByte = now
                    s.lastByte[id] = now
                    let want = min(Int64(n), end - position)
                    let r = want > 0 ? s.board.reserve(id, count: want) : 0..<0
                    s.discarded += Int64(n) - Int64(r.count)
                    return r
                }
                if !reserved.isEmpty {
                    let slice = buffer.getSlice(at: buffer.readerIndex, length: reserved.count) ?? buffer
                    try slice.withUnsafeReadableBytes { raw in
                        try FileIO.pwriteAll(fd: fd, raw, at: reserved.lowerBound, what: "write the partial file")
                        stream.wrote(raw, at: reserved.lowerBound)
                    }
                    position = reserved.upperBound
                    let (complete, readsBack) = state.withLock { s -> ([Int], Bool) in
                        s.written += Int64(reserved.count)
                        s.recordDirty = true
                        s.sources[source].bytes += Int64(reserved.count)
                        let complete = s.board.wrote(id, reserved)
                        // A piece with several writers, or one that failed so before, may be read back (`verify`).
                        let mixed = complete.contains {
                            s.board.bytesWritten(ofPiece: $0).count > 1 || s.board.suspects[$0] != nil
                        }
                        return (complete, mixed)
                    }
                    let digests = complete.map { (piece: $0, digest: stream.take($0)) }
                    if readsBack || digests.contains(where: { $0.digest == nil }) {
                        // Reading a piece back and hashing it takes milliseconds: not on the event loop this
                        // worker runs on (`LoopExecutor`), where it would hold up every connection of the loop.
                        await withTaskExecutorPreference(globalConcurrentExecutor) {
                            for (piece, digest) in digests { verify(piece, digest: digest) }
                        }
                    } else {
                        for (piece, digest) in digests { verify(piece, digest: digest) }
                    }
                }
                // Cut by another source, or at the end of what it answered: stop reading.
                if reserved.count < n || !state.withLock({ $0.board.isOpen(id) }) || position >= end { break }
                if let slow = speed.add(n, at: .now) {
                    return .again(reason: slow, progressed: position > range.lowerBound)
                }
                if let allowance = request.allowance, !allowance() {
                    while !allowance() { try await download.wake.sleep(for: .seconds(1)) }
                    speed = LowSpeedWindow(limit: request.lowSpeedLimit, window: request.lowSpeedTime, start: .now)
                }
            }
        } catch let error as TransferError {
            return .fatal(error)
        } catch {
            if Task.isCancelled { return .done }
            return .again(
                reason: "the connection failed at byte \(position) (\(FailureText.describe(error)))",
                progressed: position > range.lowerBound)
        }
        if Task.isCancelled { return .done }
        if position < range.upperBound, state.withLock({ $0.board.isOpen(id) }) {
            return .again(
                reason: "the answer ended early at byte \(position)", progressed: position > range.lowerBound)
        }
        return .done
    }

    /// Checks piece `piece`, whose last byte was just written: against `digest` when the request hashed the
    /// piece as it wrote it (`PieceStream`), or else read back from the partial file.
    private func verify(_ piece: Int, digest known: [UInt8]?) {
        let range = state.withLock { $0.board.range(ofPiece: piece) }
        switch check {
        case .hashes:
            if check.matches(piece: piece, digest: known ?? check.digest(fd: fd, range: range)) {
                let suspects = state.withLock { s in
                    s.recordDirty = true
                    return s.board.verifiedPiece(piece)
                }
                blame(suspects, piece: piece, range: range)
                return
            }
            // A piece with bytes from more than one writer: what each of this run's sources wrote of it is read
            // back before the piece is fetched again, so that once it matches, the one that sent bad bytes is
            // known (`blame`).
            let spans = state.withLock { s -> [Int: [Range<Int64>]] in
                let bySource = s.board.bytesWritten(ofPiece: piece)
                return bySource.count > 1 ? s.board.spansWritten(ofPiece: piece) : [:]
            }
            let written = spans.compactMapValues { list -> [UInt32]? in
                let crcs = list.compactMap { PieceCheck.crc32c(fd: fd, range: $0) }
                return crcs.count == list.count ? crcs : nil
            }
            let (senders, names, goes) = state.withLock { s -> (Set<Int>, [String], String?) in
                // Bytes a resumed partial held were fetched by an earlier run: they are fetched again, not thrown
                // away by this one.
                let carried = s.board.carriedBytes(ofPiece: piece)
                let bySource = s.board.bytesWritten(ofPiece: piece)
                let senders = s.board.failedPiece(piece, written: written)
                let fresh = Int64(range.count) - carried
                s.written -= fresh
                s.discarded += fresh
                s.lostResumed += carried
                s.forget(bySource)
                // The one source that sent the piece answers for it (`reject`).
                var goes: String? = ""
                if senders.count == 1, let only = senders.first, only >= 0 {
                    goes = s.goesAfterBadBytes(only, Int64(range.count), piece: piece)
                }
                return (
                    senders,
                    senders.sorted().map { $0 >= 0 ? s.sources[$0].display : "the partial file of an earlier run" },
                    goes
                )
            }
            let why =
                "piece \(piece) (bytes \(range.lowerBound)-\(range.upperBound - 1)) failed its \(check.name) check"
            if senders.count == 1, let only = senders.first, only >= 0 {
                reject(only, why, goes: goes)
            } else {
                download.sink.yield(
                    .warning("The \(why); it came from \(names.joined(separator: ", ")) and is fetched again."))
            }
        case .crc32c:
            let digest = known ?? check.digest(fd: fd, range: range) ?? []
            let crc = digest.count == 4 ? digest.reduce(UInt32(0)) { $0 << 8 | UInt32($1) } : 0
            state.withLock { s in
                if piece < s.crcs.count { s.crcs[piece] = crc }
                s.board.verifiedPiece(piece)
                s.recordDirty = true
            }
        }
    }

    /// Piece `piece` matched after a copy of it with bytes from several writers failed (`PieceBoard.Suspect`): a
    /// writer whose bytes in that copy differ from the ones that matched sent bad bytes and is dropped; one whose
    /// bytes agree is not blamed. (Blaming "the other writer" is wrong: a source whose bytes depend on the range
    /// asked, a flaky cache, may send the whole piece right and a part of it wrong.)
    private func blame(_ suspects: [PieceBoard.Suspect], piece: Int, range: Range<Int64>) {
        for suspect in suspects where suspect.source >= 0 {
            for (span, crc) in zip(suspect.spans, suspect.crcs) {
                guard let now = PieceCheck.crc32c(fd: fd, range: span), now != crc else { continue }
                let goes = state.withLock { $0.goesAfterBadBytes(suspect.source, Int64(span.count), piece: nil) }
                reject(
                    suspect.source,
                    "piece \(piece) (bytes \(range.lowerBound)-\(range.upperBound - 1)) failed its \(check.name) "
                        + "check; the bytes \(span.lowerBound)-\(span.upperBound - 1) it sent of it differ from the copy "
                        + "that matched", goes: goes)
                break
            }
        }
    }
}

/// One source of a download from several (docs/mirrors.md), as `status` and `get` report it.
public struct SourceReport: Sendable, Equatable {
    /// The source's URL, its query redacted.
    public var url: String
    /// The file's bytes it delivered that are kept.
    public var bytes: Int64
    /// Why it was dropped; nil while it is used.
    public var dropped: String?
    /// Why it stands by (it takes work when the preferred sources are dropped); nil while it takes work.
    public var standby: String?
    /// The proxy its requests go through (`no_proxy` may differ per source), a password shown as `<redacted>`;
    /// nil: direct.
    public var proxy: String?

    public init(url: String, bytes: Int64, dropped: String? = nil, standby: String? = nil, proxy: String? = nil) {
        self.url = url
        self.bytes = bytes
        self.dropped = dropped
        self.standby = standby
        self.proxy = proxy
    }
}
