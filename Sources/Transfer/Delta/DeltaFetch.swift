import AsyncHTTPClient
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The fetch of a delta's missing ranges (docs/delta.md): a few connections take requests of several
/// ranges each from one queue. A `multipart/byteranges` answer is read part by part; a server that
/// answers only single ranges gets one range per request from then on. Every 206 carries the target's
/// validator, every part lies inside what was asked; what a failed request did not deliver goes back
/// to the queue, so nothing is asked twice.
final class DeltaFetch: Sendable {
    /// Ranges per request (the Range header stays under 2 KiB).
    static let maxRanges = 64
    /// Bytes per request: small enough that four connections share the work to the end.
    static let maxRequestBytes: Int64 = 2 << 20

    enum End: Sendable {
        case complete
        case stopped(Download.StopReason)
    }

    struct State {
        var queue: [[Range<Int64>]] = []
        var fetched: Int64 = 0
        var discarded: Int64 = 0
        var written: Int64 = 0
        var singleRanges = false
        var active = 0
        var rate = RateEstimate()
    }

    let run: DeltaRun
    /// The control file's checksums, to check what arrives; nil for an empty target.
    let index: BlockIndex?
    let target: DeltaRun.Target
    let total: Int64
    let fd: Int32
    let reused: Int64
    let state = Mutex(State())

    init(run: DeltaRun, index: BlockIndex?, target: DeltaRun.Target, total: Int64, fd: Int32, reused: Int64) {
        self.run = run
        self.index = index
        self.target = target
        self.total = total
        self.fd = fd
        self.reused = reused
    }

    var download: Download { run.download }
    var request: DownloadRequest { run.request }

    func counts() -> (fetched: Int64, discarded: Int64) {
        state.withLock { ($0.fetched, $0.discarded) }
    }

    func progress() -> DownloadProgress {
        state.withLock { s in
            DownloadProgress(
                bytesDone: reused + s.written, totalBytes: total, bytesFetched: s.fetched,
                bytesPerSecond: s.rate.perSecond, activeSegments: s.active, discardedBytes: s.discarded)
        }
    }

    private typealias Turn = WorkerTurn

    func run(plan: DeltaPlan) async throws(TransferError) -> End {
        state.withLock { $0.queue = plan.requests(maxRanges: Self.maxRanges, maxBytes: Self.maxRequestBytes) }
        let workers = request.segmentCount(total: plan.bytesToFetch)
        let outcome = await download.runWorkers(
            workers, tick: { _ in self.download.sink.yield(.progress(self.progress())) },
            worker: { _ in await self.worker() })
        switch outcome {
        case .finished:
            download.sink.yield(.progress(progress()))
            return .complete
        case .stop(let reason): return .stopped(reason)
        case .failed(let error): throw error
        }
    }

    /// Takes requests from the queue until it is empty; retries a request that failed in a way retrying
    /// can fix, with back-off, as often as the download's retry policy allows without progress.
    private func worker() async -> Turn {
        var failures = 0
        while !Task.isCancelled {
            guard let ranges = take() else { return .finished }
            state.withLock { $0.active += 1 }
            let result = await fetch(ranges)
            state.withLock { $0.active -= 1 }
            switch result {
            case .done:
                failures = 0
            case .again(let rest, let reason, let progressed):
                putBack(rest)
                if Task.isCancelled { return .finished }
                // A request that delivered something (or taught how to ask) is asked again at once.
                if progressed {
                    failures = 0
                    continue
                }
                failures += 1
                guard
                    let delay = download.retry.delay(
                        attempt: failures, retryAfter: nil, jitter: Double.random(in: 0..<1))
                else {
                    return .failed(
                        TransferError(
                            .retriesExhausted,
                            GiveUpText.retriesExhausted(
                                retries: request.maxRetries, reason: reason, bytesDone: progress().bytesDone)))
                }
                download.sink.yield(.retrying(attempt: failures, delay: delay, reason: reason))
                do { try await download.wake.sleep(for: delay) } catch { return .finished }
            case .failed(let error):
                return .failed(error)
            }
        }
        return .finished
    }

    private func take() -> [Range<Int64>]? {
        state.withLock { s in
            guard !s.queue.isEmpty else { return nil }
            var next = s.queue.removeFirst()
            if s.singleRanges, next.count > 1 {
                s.queue.insert(Array(next.dropFirst()), at: 0)
                next = [next[0]]
            }
            return next
        }
    }

    private func putBack(_ ranges: [Range<Int64>]) {
        guard !ranges.isEmpty else { return }
        state.withLock { $0.queue.insert(ranges, at: 0) }
    }

    private enum Fetched {
        case done
        case again(rest: [Range<Int64>], reason: String, progressed: Bool)
        case failed(TransferError)
    }

    /// One request for `ranges`.
    private func fetch(_ ranges: [Range<Int64>]) async -> Fetched {
        let answer: DeltaRun.Answer
        do {
            answer = try await run.get(
                target.url, range: DeltaPlan.rangeHeader(ranges), validators: target.validators)
        } catch {
            if Task.isCancelled { return .done }
            return .again(rest: ranges, reason: error.message, progressed: false)
        }
        let response = answer.response
        let status = Int(response.status.code)
        switch status {
        case 206:
            break
        case 200 where ranges.count > 1:
            // Some servers answer several ranges with the whole object: one range per request from now on.
            state.withLock { $0.singleRanges = true }
            return .again(
                rest: ranges, reason: "the server answers several ranges with the whole file", progressed: true)
        case 200, 412:
            return .failed(
                TransferError(
                    .objectUnstable,
                    "The file changed on the server since its control file was read (HTTP \(status) to a range request with If-Match); run again to use the new control file. The partial file is kept."
                ))
        case 408, 425, 429, 500...599:
            return .again(rest: ranges, reason: "the server answered HTTP \(status)", progressed: false)
        default:
            return .failed(
                TransferError(
                    .httpStatus,
                    "The server answered HTTP \(status) to a range request for \(RedactedURL.redact(target.url)).")
            )
        }
        let validators = Validators(
            etag: response.headers.first(name: "ETag"), lastModified: response.headers.first(name: "Last-Modified"))
        guard target.validators.matches(validators) else {
            return .failed(
                TransferError(
                    .objectUnstable,
                    "The file changed on the server during the download (its ETag or Last-Modified changed); run again to use the new control file. The partial file is kept."
                ))
        }
        var reader = BodyReader(asked: ranges, total: total)
        if let type = response.headers.first(name: "Content-Type"),
            let multipart = MultipartByteRanges(contentType: type, total: total)
        {
            reader.multipart = multipart
        } else {
            guard let header = response.headers.first(name: "Content-Range"), let range = ContentRange(header: header),
                range.total == total, reader.isWithin(range.first..<range.last + 1)
            else {
                return .failed(
                    TransferError(
                        .protocolViolation,
                        "The server's 206 answer is not for the ranges asked (Content-Range \(response.headers.first(name: "Content-Range") ?? "missing")); nothing of it was written."
                    ))
            }
            reader.begin(range.first..<range.last + 1)
        }
        var speed = LowSpeedWindow(limit: request.lowSpeedLimit, window: request.lowSpeedTime, start: .now)
        do {
            for try await buffer in response.body {
                let n = buffer.readableBytes
                request.onBytes?(n)
                // Counted as received first: a buffer the reader refuses was still fetched (and thrown away).
                state.withLock { s in
                    s.fetched += Int64(n)
                    s.discarded += Int64(n)
                    s.rate.add(n)
                }
                try await download.limiter.wait(for: n)
                let kept = try buffer.withUnsafeReadableBytes { raw throws(TransferError) in
                    try reader.feed(raw, fd: fd)
                }
                state.withLock { s in
                    s.discarded -= kept
                    s.written += kept
                }
                if let slow = speed.add(n, at: .now) {
                    let rest = reader.remaining()
                    return .again(rest: rest, reason: slow, progressed: rest != ranges)
                }
                if let allowance = request.allowance, !allowance() {
                    while !allowance() { try await download.wake.sleep(for: .seconds(1)) }
                    speed = LowSpeedWindow(limit: request.lowSpeedLimit, window: request.lowSpeedTime, start: .now)
                }
            }
            if reader.multipart != nil { try reader.multipart?.finish() }
        } catch let error as TransferError {
            let rest = reader.remaining()
            if error.code == .fileSystem { return .failed(error) }
            // A malformed multipart answer: one range per request from now on, which needs no multipart.
            if reader.multipart != nil, ranges.count > 1 {
                state.withLock { $0.singleRanges = true }
                return .again(rest: rest, reason: error.message, progressed: true)
            }
            return .again(rest: rest, reason: error.message, progressed: rest != ranges)
        } catch {
            let rest = reader.remaining()
            if Task.isCancelled { return .done }
            return .again(rest: rest, reason: "the connection failed: \(error)", progressed: rest != ranges)
        }
        let rest = reader.remaining()
        if !rest.isEmpty {
            if reader.multipart == nil, ranges.count > 1 { state.withLock { $0.singleRanges = true } }
            return .again(rest: rest, reason: "the answer ended before every range asked", progressed: rest != ranges)
        }
        return checkBlocks(ranges)
    }

    /// Checks every block of `ranges` (as written now) against the control file's checksums: a block the
    /// server sent wrong is asked for again, and counts as thrown away; nothing else is fetched twice.
    private func checkBlocks(_ ranges: [Range<Int64>]) -> Fetched {
        guard let index, let first = ranges.first, let last = ranges.last else { return .done }
        let size = Int64(index.control.blockSize)
        let blocks = Int(first.lowerBound / size)..<Int((last.upperBound - 1) / size) + 1
        let right = index.check(fd: fd, blocks: blocks)
        var wrong: [Range<Int64>] = []
        for (k, ok) in right.enumerated() where !ok {
            let block = index.control.range(ofBlock: blocks.lowerBound + k)
            // Blocks this request completed: it brought their last byte (a block begun by a request that failed
            // is finished by the one that asks for the rest). The ranges may leave blocks between them out.
            guard ranges.contains(where: { $0.lowerBound < block.upperBound && block.upperBound <= $0.upperBound })
            else { continue }
            if let previous = wrong.last, previous.upperBound == block.lowerBound {
                wrong[wrong.count - 1] = previous.lowerBound..<block.upperBound
            } else {
                wrong.append(block)
            }
        }
        guard !wrong.isEmpty else { return .done }
        let bytes = wrong.reduce(Int64(0)) { $0 + Int64($1.count) }
        state.withLock { s in
            s.discarded += bytes
            s.written -= bytes
        }
        return .again(
            rest: wrong,
            reason:
                "\(wrong.count) range\(wrong.count == 1 ? "" : "s") (\(bytes) bytes) did not match the control file's checksums; asked for again",
            progressed: false)
    }
}

/// Reads one answer's body into the partial file: the bytes of the parts asked for go to their offsets;
/// what was received is remembered so the rest can be asked again.
private struct BodyReader {
    let asked: [Range<Int64>]
    let total: Int64
    var multipart: MultipartByteRanges?
    /// The part being read: its next byte and end.
    var current: (next: Int64, end: Int64)?
    var received: [Range<Int64>] = []

    init(asked: [Range<Int64>], total: Int64) {
        self.asked = asked
        self.total = total
    }

    func isAsked(_ range: Range<Int64>) -> Bool {
        asked.contains { $0.lowerBound <= range.lowerBound && range.upperBound <= $0.upperBound }
    }

    /// Whether `range` lies between the first byte asked and the last (a server may answer several ranges with
    /// one that spans them).
    func isWithin(_ range: Range<Int64>) -> Bool {
        guard let first = asked.first, let last = asked.last else { return false }
        return first.lowerBound <= range.lowerBound && range.upperBound <= last.upperBound
    }

    mutating func begin(_ range: Range<Int64>) {
        close()
        current = (range.lowerBound, range.upperBound)
        received.append(range.lowerBound..<range.lowerBound)
    }

    mutating func close() {
        current = nil
    }

    /// Writes what of `raw` belongs to the parts; returns the bytes written.
    mutating func feed(_ raw: UnsafeRawBufferPointer, fd: Int32) throws(TransferError) -> Int64 {
        guard var parser = multipart else { return try write(raw, fd: fd) }
        var kept: Int64 = 0
        try parser.feed(raw) { (event) throws(TransferError) in
            switch event {
            case .part(let range):
                guard isAsked(range) else {
                    throw MultipartByteRanges.violation(
                        "a part is for bytes \(range.lowerBound)-\(range.upperBound - 1), which were not asked for")
                }
                begin(range)
            case .data(_, let bytes):
                kept += try write(bytes, fd: fd)
            }
        }
        multipart = parser
        return kept
    }

    private mutating func write(_ bytes: UnsafeRawBufferPointer, fd: Int32) throws(TransferError) -> Int64 {
        guard let (next, end) = current else {
            if bytes.isEmpty { return 0 }
            throw MultipartByteRanges.violation("bytes arrived outside any part")
        }
        let n = Int(min(Int64(bytes.count), end - next))
        guard n > 0 else { return 0 }
        try FileIO.pwriteAll(
            fd: fd, UnsafeRawBufferPointer(rebasing: bytes[0..<n]), at: next, what: "write the partial file")
        current = (next + Int64(n), end)
        let last = received.count - 1
        received[last] = received[last].lowerBound..<next + Int64(n)
        return Int64(n)
    }

    /// The asked ranges less what arrived.
    func remaining() -> [Range<Int64>] {
        var out: [Range<Int64>] = []
        for range in asked {
            var pieces = [range]
            for got in received where !got.isEmpty {
                pieces = pieces.flatMap { piece -> [Range<Int64>] in
                    guard got.lowerBound < piece.upperBound, got.upperBound > piece.lowerBound else { return [piece] }
                    var left: [Range<Int64>] = []
                    if piece.lowerBound < got.lowerBound { left.append(piece.lowerBound..<got.lowerBound) }
                    if got.upperBound < piece.upperBound { left.append(got.upperBound..<piece.upperBound) }
                    return left
                }
            }
            out += pieces
        }
        return out
    }
}

/// The receive rate over the last quarter second or so, smoothed.
struct RateEstimate {
    private var windowStart: ContinuousClock.Instant?
    private var lastAt: ContinuousClock.Instant?
    private var bytes: Int64 = 0
    private(set) var perSecond: Double = 0

    /// `perSecond`, or before the first window closed, the rate of what arrived so far (a fast source may
    /// deliver its share in less than one window).
    var estimate: Double {
        if perSecond > 0 { return perSecond }
        guard let windowStart, let lastAt, lastAt > windowStart else { return 0 }
        return Double(bytes) / (lastAt - windowStart).secondsDouble
    }

    /// Counts `n` bytes received at `now`; the first call starts the first window.
    mutating func add(_ n: Int, at now: ContinuousClock.Instant = .now) {
        lastAt = now
        guard let windowStart else {
            self.windowStart = now
            bytes = Int64(n)
            return
        }
        bytes += Int64(n)
        let elapsed = (now - windowStart).secondsDouble
        if elapsed >= 0.25 {
            let instant = Double(bytes) / elapsed
            perSecond = perSecond == 0 ? instant : perSecond * 0.5 + instant * 0.5
            bytes = 0
            self.windowStart = now
        }
    }
}
