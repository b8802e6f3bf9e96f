import Synchronization

/// The shared state of one attempt: the range plan, what is known about the object, and counters.
/// Segments read and update it under a lock; the decisions themselves live in `RangePlan` and
/// `ResponseClassifier`.
final class DownloadBoard: Sendable {
    struct State {
        var plan: RangePlan
        var known: KnownObject?
        var acceptRanges: Bool
        /// The next request goes without a Range header (after a restart).
        var plain: Bool
        var parts: @Sendable (Int64) -> Int
        /// The segments this attempt runs, once decided (nil before the first response of a fresh download).
        var segments: Int?
        /// When each segment's request in flight was asked, and where and when its first body bytes were written
        /// (for `RequestSpan.cut`).
        var requestStarts: [Int: RequestStart] = [:]
        /// The longest a request of this attempt waited for its first bytes to be written (`RequestSpan.cut`).
        var slowestFirstBytes: Duration = .zero
        var resumedBytes: Int64
        var written: Int64 = 0
        var fetched: Int64 = 0
        var inFlight: Set<Int> = []
        var learned: AsyncStream<Int>.Continuation?
        /// The object's length was admitted (size limits, free space, the engine's decision) in this attempt.
        var admitted = false
        /// Response heads read in this attempt (estimated from the parsed head), to tell them from body bytes.
        var headBytes: Int64 = 0
        /// The attempt is pausing (`PauseDrain`): segments read what the kernels hold but start nothing new.
        var draining = false
        var lastReceive = ContinuousClock.now
        /// Why the last transfer failed part-way, when that ended the attempt (a restart for want of validators).
        var lastFailure: String?
        /// The server's ETag changed between requests for the same bytes (`ContentCheck`): it is not used.
        var unstableETag = false
        /// A content check is being made by one segment; the others wait for its answer.
        var checking = false
        /// A content check found other bytes: the attempt is restarting, no other check is needed.
        var contentChanged = false
        /// Where the download's URL led through redirects when a body came: later requests of the attempt
        /// start there, as aria2c's do, instead of asking the first server again.
        var redirected: String?
    }

    /// One request in flight: when it was asked, and where and when its body bytes were written.
    struct RequestStart {
        var at: ContinuousClock.Instant
        /// Marks taken at writes at least `RequestSpan.judged` apart, the first where and when its first body bytes
        /// were written (those bytes not counted: a rate is taken from them on). Its rate is judged from the mark
        /// before the last (`window`), so over its last half second to second once it has one, not over its whole
        /// body (a request whose first megabyte came at once and the rest at a crawl showed a fast average for
        /// seconds).
        var mark: (next: Int64, at: ContinuousClock.Instant)?
        var markBefore: (next: Int64, at: ContinuousClock.Instant)?
        /// The last write (or when it was asked, before the first).
        var lastWrite: ContinuousClock.Instant

        init(at: ContinuousClock.Instant) {
            self.at = at
            self.lastWrite = at
        }

        /// Where and when the window its rate is judged over starts: the first mark until there is a second.
        var window: (next: Int64, at: ContinuousClock.Instant)? { markBefore ?? mark }

        /// A write at `now` took the request from byte `from` to `to`.
        mutating func wrote(from: Int64, to: Int64, at now: ContinuousClock.Instant) {
            lastWrite = now
            guard let mark else {
                self.mark = (from, now)
                return
            }
            if now - mark.at >= RequestSpan.judged {
                markBefore = mark
                self.mark = (to, now)
            }
        }
    }

    let state: Mutex<State>
    /// A download from several sources was left part-way under this name (`DownloadRun`): the first request asks
    /// for one byte, and its answer turns this one into one from several again, so that its verified pieces are
    /// used.
    let sourcesLeftPartWay: Bool

    /// Where the download's URL led when a body last came through redirects (`State.redirected`).
    var redirected: String? { state.withLock { $0.redirected } }

    /// Later requests start at `url`, where redirects led.
    func noteRedirected(to url: String) { state.withLock { $0.redirected = url } }

    /// Later requests start at the download's own URL again, unless another segment has already noted
    /// another place than `url`.
    func forgetRedirect(to url: String) {
        state.withLock { s in
            if s.redirected == url { s.redirected = nil }
        }
    }

    /// Keeps why a transfer failed part-way, for the message if the download gives up.
    func noteFailure(_ reason: String) { state.withLock { $0.lastFailure = reason } }

    /// Why the last transfer failed part-way, if one did.
    var lastFailure: String? { state.withLock { $0.lastFailure } }

    init(
        plan: RangePlan, known: KnownObject?, acceptRanges: Bool, plain: Bool,
        parts: @escaping @Sendable (Int64) -> Int,
        resumedBytes: Int64, unstableETag: Bool = false, sourcesLeftPartWay: Bool = false
    ) {
        var s = State(
            plan: plan, known: known, acceptRanges: acceptRanges, plain: plain, parts: parts,
            resumedBytes: resumedBytes)
        s.unstableETag = unstableETag
        state = Mutex(s)
        self.sourcesLeftPartWay = sourcesLeftPartWay
    }

    /// Whether the server's ETag was found to change for the same bytes.
    var unstableETag: Bool { state.withLock { $0.unstableETag } }

    /// The content check proved the bytes the same under another ETag: from now on the object is identified
    /// by its length and, when the server keeps it, Last-Modified (`lastModified`: the date the check's
    /// answers all carried, or nil).
    func distrustETag(lastModified: String?) {
        state.withLock { s in
            s.unstableETag = true
            let date = s.known?.validators.lastModified
            s.known?.validators = Validators(etag: nil, lastModified: lastModified == date ? lastModified : nil)
        }
    }

    /// Takes the content check for this segment: true when no other segment is making one.
    func beginCheck() -> Bool {
        state.withLock { s in
            if s.checking { return false }
            s.checking = true
            return true
        }
    }

    func endCheck(changed: Bool) {
        state.withLock {
            $0.checking = false
            if changed { $0.contentChanged = true }
        }
    }

    var contentChanged: Bool { state.withLock { $0.contentChanged } }

    var known: KnownObject? { state.withLock { $0.known } }
    var acceptRanges: Bool { state.withLock { $0.acceptRanges } }

    /// Segments for an object of `total` bytes.
    func parts(total: Int64) -> Int { state.withLock { $0.parts(total) } }

    /// Splits pending work for `n` segments (a resumed attempt).
    func split(into n: Int) {
        state.withLock {
            $0.plan.split(into: n)
            $0.segments = n
        }
    }

    /// Where attempts report "the first response arrived".
    func setLearned(_ c: AsyncStream<Int>.Continuation) { state.withLock { $0.learned = c } }
    var plan: RangePlan { state.withLock { $0.plan } }

    /// `segment`'s next range (`RangePlan.assign`); a request of another segment that is too slow to wait for
    /// may be cut, past what it keeps (`RequestSpan.cut`).
    func assign(_ segment: Int) -> RangePlan.Assignment? {
        let now = ContinuousClock.now
        return state.withLock { s in
            var slow: [Int: Int64] = [:]
            for (id, a) in s.plan.active where id != segment && a.requested > a.next {
                guard let start = s.requestStarts[id] else { continue }
                let body = start.window.map {
                    RequestSpan.Body(done: a.next - $0.next, elapsed: now - $0.at, quiet: now - start.lastWrite)
                }
                slow[id] = RequestSpan.cut(
                    left: a.requested - a.next, remaining: a.remaining, asked: now - start.at, body: body,
                    slowestFirstBytes: s.slowestFirstBytes, sinceAnyBytes: now - s.lastReceive)
            }
            return s.plan.assign(segment: segment, slow: slow)
        }
    }
    /// Whether another segment has a request in flight that `assign` could cut into once it proves too slow.
    func mayTakeLater(_ segment: Int) -> Bool { state.withLock { $0.plan.hasRequestToCut(besides: segment) } }

    func end(of segment: Int) -> Int64 { state.withLock { $0.plan.end(of: segment) } }
    func release(_ segment: Int) { state.withLock { $0.plan.release(segment: segment) } }

    /// The range to ask for next on `segment` (a span of it, `RequestSpan`, from the segment's last
    /// request's figures), and whether local data exists that it continues.
    func ask(for segment: Int, span figures: RequestSpan) -> (
        RangeAsk, KnownObject?, hasLocalData: Bool, hasAllData: Bool
    ) {
        state.withLock { s in
            let next = s.plan.next(of: segment)
            let hasLocal = s.resumedBytes + s.written > 0
            let hasAll = s.plan.total != nil && s.plan.isComplete
            if s.plain && next == 0 {
                s.plain = false
                _ = s.plan.request(segment: segment, span: nil)
                return (RangeAsk(start: 0, last: nil, ranged: false), s.known, hasLocal, hasAll)
            }
            let segmented = s.segments.map { $0 > 1 } ?? (s.parts(ObjectLimits.maxBytes) > 1)
            let probe = sourcesLeftPartWay && s.known == nil && next == 0
            let span =
                probe
                ? 1 : figures.bytes(segmented: segmented, lengthKnown: s.plan.total != nil, answered: s.known != nil)
            let upper = s.plan.request(segment: segment, span: span)
            s.requestStarts[segment] = RequestStart(at: .now)
            let openEnded = upper == RangePlan.unknownEnd || (s.known == nil && span == nil)
            return (RangeAsk(start: next, last: openEnded ? nil : upper - 1, ranged: true), s.known, hasLocal, hasAll)
        }
    }

    /// `segment`'s request is over: what it asked for and did not receive may be taken by another segment.
    func endRequest(_ segment: Int) { state.withLock { $0.plan.endRequest(segment: segment) } }

    /// True the first time it is called in this attempt: the one segment that then admits the length.
    func takeAdmission() -> Bool {
        state.withLock { s in
            defer { s.admitted = true }
            return !s.admitted
        }
    }

    /// Adopts the first response's validators and length; returns the segment count to run with.
    /// `contentType` and `source` (the place that answered, `AnswerPath.place`) tell a portal's page from the
    /// object later (`Interception`); the first body's are kept.
    func accept(
        total: Int64?, validators: Validators, ranged: Bool, segment: Int, contentType: String? = nil,
        source: String? = nil
    ) {
        state.withLock { s in
            guard s.known == nil else {
                if s.known?.contentType == nil { s.known?.contentType = contentType }
                if s.known?.source == nil { s.known?.source = source }
                if s.plan.total == nil, let total { s.plan.learnTotal(total, parts: 1) }
                // A weak ETag at first (Apache's, for a file modified within the last second) becomes strong
                // later: adopt it when Last-Modified vouches that it is the same version, so If-Match guards
                // the rest.
                if let known = s.known, known.validators.etag == nil, !s.unstableETag, let etag = validators.etag,
                    let date = known.validators.lastModified, date == validators.lastModified
                {
                    s.known?.validators.etag = etag
                }
                return
            }
            // A server known to change its ETag for the same bytes: the ETag is not a validator.
            let kept = s.unstableETag ? Validators(etag: nil, lastModified: validators.lastModified) : validators
            s.known = KnownObject(validators: kept, total: total, contentType: contentType, source: source)
            s.acceptRanges = ranged
            if let total {
                let parts = ranged && (!kept.isEmpty || s.unstableETag) ? s.parts(total) : 1
                s.plan.learnTotal(total, parts: parts)
                s.segments = parts
                s.learned?.yield(parts)
            } else {
                s.segments = 1
                s.learned?.yield(1)
            }
        }
    }

    /// The body ended without a length: what was received is the whole object.
    func learnEnd(at position: Int64) {
        state.withLock { s in
            s.plan.learnTotal(position, parts: 1)
            s.known?.total = position
        }
    }

    func received(_ n: Int) {
        let now = ContinuousClock.now
        state.withLock {
            $0.fetched += Int64(n)
            $0.lastReceive = now
        }
    }

    /// Segments start no new request from now on; those reading go on until the attempt ends.
    func beginDrain() { state.withLock { $0.draining = true } }
    var isDraining: Bool { state.withLock { $0.draining } }
    var lastReceive: ContinuousClock.Instant { state.withLock { $0.lastReceive } }

    func addHead(bytes: Int) { state.withLock { $0.headBytes += Int64(bytes) } }

    /// Bytes written and response-head bytes read in this attempt.
    var kept: (written: Int64, heads: Int64) { state.withLock { ($0.written, $0.headBytes) } }

    func advance(_ segment: Int, to position: Int64, wrote n: Int) {
        let now = ContinuousClock.now
        state.withLock { s in
            if let start = s.requestStarts[segment] {
                if start.mark == nil { s.slowestFirstBytes = max(s.slowestFirstBytes, now - start.at) }
                s.requestStarts[segment]?.wrote(from: s.plan.next(of: segment), to: position, at: now)
            }
            s.plan.advance(segment: segment, to: position)
            s.written += Int64(n)
        }
    }

    func setInFlight(_ segment: Int, _ on: Bool) {
        state.withLock { s in
            if on { s.inFlight.insert(segment) } else { s.inFlight.remove(segment) }
        }
    }

    var counters: (done: Int64, fetched: Int64, total: Int64?, active: Int) {
        state.withLock { ($0.resumedBytes + $0.written, $0.fetched, $0.plan.total, $0.inFlight.count) }
    }

    func checkpoint(url: String, destination: String, pieces: [Checkpoint.Piece]) -> Checkpoint? {
        state.withLock { s in
            guard let known = s.known, let total = s.plan.total else { return nil }
            let segments = s.plan.active.values.map { Checkpoint.SegmentRecord(start: $0.next, end: $0.end) }
                .sorted { $0.start < $1.start }
            var checkpoint = Checkpoint(
                url: RedactedURL.redact(url), destination: destination, validators: known.validators, totalBytes: total,
                acceptRanges: s.acceptRanges, chunkSize: s.plan.chunkSize, segments: segments, pieces: pieces
            )
            checkpoint.unstableETag = s.unstableETag ? true : nil
            checkpoint.contentType = known.contentType
            checkpoint.source = known.source
            return checkpoint
        }
    }
}
