/// The pieces of a download from several sources (docs/mirrors.md): the bytes still to fetch, the span each
/// request holds, the pieces complete and verified, and the sources that may not serve a piece again. Pure:
/// `MirrorFetch` asks it under one lock.
///
/// A request reserves bytes before it writes them (`reserve`) and reports them written after (`wrote`), so a
/// span cut by another source (`steal`) is never written twice and a request that ends gives back exactly
/// what it did not write (`finish`).
struct PieceBoard: Sendable {
    struct Active: Sendable, Equatable {
        var source: Int
        /// Written up to here.
        var done: Int64
        /// Reserved up to here (written or being written).
        var next: Int64
        var end: Int64
        var begun: ContinuousClock.Instant
    }

    let total: Int64
    let pieceLength: Int64
    /// Byte spans no request holds, sorted and disjoint.
    private(set) var pending: [Range<Int64>] = []
    private(set) var active: [Int: Active] = [:]
    /// Bytes written of each piece not yet checked.
    private var filled: [Int64]
    private(set) var verified: [Bool]
    private(set) var verifiedCount = 0
    /// The bytes each source wrote of each piece being filled (`earlierRun` for bytes a resumed partial holds).
    private var contributors: [Int: [Int: Int64]] = [:]
    /// The spans each source of this run wrote of each piece being filled, sorted and disjoint.
    private var spans: [Int: [Int: [Range<Int64>]]] = [:]
    /// A source's bytes in a copy of a piece that failed its check with bytes from more than one writer: each span
    /// it wrote with the CRC-32C it had. When the piece matches, a span whose bytes differ from the copy that
    /// matched shows that source sent bad bytes (`MirrorFetch` drops it); a span that agrees clears it.
    struct Suspect: Sendable, Equatable {
        var source: Int
        var spans: [Range<Int64>]
        var crcs: [UInt32]
    }
    /// The writers of each failed mixed piece (`Suspect`), until the piece matches.
    private(set) var suspects: [Int: [Suspect]] = [:]
    /// Pieces with bytes written and not yet verified.
    private var started: Set<Int> = []
    /// Bytes of each piece a resumed partial file held when this run began (not yet verified).
    private var carried: [Int: Int64] = [:]
    /// The contributor that stands for the earlier run of a resumed partial: a piece it helped write that fails
    /// is fetched again and no source is blamed.
    static let earlierRun = -1
    /// Sources that sent a piece that failed its check: they are not asked for it again.
    private(set) var refused: [Int: Set<Int>] = [:]
    /// Pieces that failed their check with bytes from more than one source (or from an earlier run): each is
    /// fetched again whole by one request, never split, so the source that sends it answers for it alone.
    private(set) var whole: Set<Int> = []
    private var nextID = 0

    /// A board for `total` bytes in pieces of `pieceLength`; `verified` marks the pieces a partial file
    /// already holds (checked), `written` the bytes of other pieces it holds (an earlier run's pieces left part
    /// way, checked against their CRC-32C); the rest is pending. A piece that `written` covers whole is fetched
    /// again: nothing verified it.
    init(total: Int64, pieceLength: Int64, verified given: [Bool] = [], written: [Range<Int64>] = []) {
        self.total = max(0, total)
        self.pieceLength = max(1, pieceLength)
        let count = self.total == 0 ? 0 : Int((self.total - 1) / self.pieceLength) + 1
        filled = Array(repeating: 0, count: count)
        verified = given.count == count ? given : Array(repeating: false, count: count)
        verifiedCount = verified.lazy.filter { $0 }.count
        let spans = Self.merged(
            written.compactMap { span in
                let low = max(0, span.lowerBound)
                let high = min(self.total, span.upperBound)
                return low < high ? low..<high : nil
            })
        var next = 0
        for piece in 0..<count where !verified[piece] {
            let whole = range(ofPiece: piece)
            while next < spans.count, spans[next].upperBound <= whole.lowerBound { next += 1 }
            var holes: [Range<Int64>] = []
            var at = whole.lowerBound
            var index = next
            while index < spans.count, spans[index].lowerBound < whole.upperBound {
                let low = max(spans[index].lowerBound, whole.lowerBound)
                if low > at { holes.append(at..<low) }
                at = max(at, min(spans[index].upperBound, whole.upperBound))
                index += 1
            }
            if at < whole.upperBound { holes.append(at..<whole.upperBound) }
            let held = Int64(whole.count) - holes.reduce(Int64(0)) { $0 + Int64($1.count) }
            guard held > 0, held < Int64(whole.count) else {
                appendPending(whole)
                continue
            }
            for hole in holes { appendPending(hole) }
            filled[piece] = held
            carried[piece] = held
            contributors[piece] = [Self.earlierRun: held]
            started.insert(piece)
        }
    }

    var pieceCount: Int { verified.count }
    var isComplete: Bool { verifiedCount == pieceCount }
    var verifiedBytes: Int64 {
        (0..<pieceCount).reduce(Int64(0)) { $0 + (verified[$1] ? Int64(range(ofPiece: $1).count) : 0) }
    }

    /// Bytes of unverified pieces that a resumed partial file held when this run began.
    var carriedBytes: Int64 { carried.values.reduce(0, +) }

    /// Bytes of `piece` that the resumed partial file held (0 once the piece is verified or failed).
    func carriedBytes(ofPiece piece: Int) -> Int64 { carried[piece] ?? 0 }

    /// The bytes written of pieces not yet verified, sorted and disjoint: what a checkpoint keeps of pieces
    /// left part way. A piece written whole and waiting for its check is left out (it is fetched again).
    var writtenUnverified: [Range<Int64>] {
        let unwritten = Self.merged(pending + active.values.map { $0.done..<$0.end })
        var spans: [Range<Int64>] = []
        for piece in started.sorted() where !verified[piece] {
            let whole = range(ofPiece: piece)
            guard filled[piece] < Int64(whole.count) else { continue }
            var at = whole.lowerBound
            for hole in unwritten where hole.upperBound > whole.lowerBound && hole.lowerBound < whole.upperBound {
                if hole.lowerBound > at { spans.append(at..<hole.lowerBound) }
                at = max(at, hole.upperBound)
            }
            if at < whole.upperBound { spans.append(at..<whole.upperBound) }
        }
        return Self.merged(spans)
    }

    func range(ofPiece piece: Int) -> Range<Int64> {
        let start = Int64(piece) * pieceLength
        return start..<min(total, start + pieceLength)
    }

    func piece(at offset: Int64) -> Int { Int(offset / pieceLength) }

    /// The pieces `range` touches.
    func pieces(of range: Range<Int64>) -> ClosedRange<Int> {
        piece(at: range.lowerBound)...piece(at: max(range.lowerBound, range.upperBound - 1))
    }

    func mayServe(_ source: Int, piece: Int) -> Bool { !(refused[piece]?.contains(source) ?? false) }

    /// A span for `source`: from the first pending byte of a piece it may serve, to the end of a piece, at most
    /// about `maxBytes` (always at least to the end of its first piece) and never into a piece it may not serve.
    /// With `wholePieces` false, a `maxBytes` under what is left of the first piece ends the span inside it (the
    /// last bytes of a download, shared by every connection).
    mutating func take(
        source: Int, maxBytes: Int64, wholePieces: Bool = true, now: ContinuousClock.Instant = .now
    ) -> (id: Int, range: Range<Int64>)? {
        for (index, span) in pending.enumerated() {
            var start = span.lowerBound
            while start < span.upperBound, !mayServe(source, piece: piece(at: start)) {
                start = range(ofPiece: piece(at: start)).upperBound
            }
            guard start < span.upperBound else { continue }
            var end = min(span.upperBound, range(ofPiece: piece(at: start)).upperBound)
            if !wholePieces, maxBytes > 0, !whole.contains(piece(at: start)) { end = min(end, start + maxBytes) }
            while end < span.upperBound, end - start < maxBytes, mayServe(source, piece: piece(at: end)) {
                end = min(span.upperBound, range(ofPiece: piece(at: end)).upperBound)
            }
            var rest: [Range<Int64>] = []
            if span.lowerBound < start { rest.append(span.lowerBound..<start) }
            if end < span.upperBound { rest.append(end..<span.upperBound) }
            pending.replaceSubrange(index...index, with: rest)
            return open(source: source, start..<end, now: now)
        }
        return nil
    }

    /// Whether pending bytes exist that `source` may serve.
    func hasWork(for source: Int) -> Bool {
        pending.contains { span in
            var start = span.lowerBound
            while start < span.upperBound {
                if mayServe(source, piece: piece(at: start)) { return true }
                start = range(ofPiece: piece(at: start)).upperBound
            }
            return false
        }
    }

    /// When nothing is pending for `source`: the request that will end last, judged by its source's rate
    /// (`rates`, bytes per second; a source without one that has held its request for `patience` counts as
    /// stalled), is cut where it stands and its rest given to `source` — when `source` would finish it clearly
    /// sooner. Nil when no request is worth taking.
    mutating func steal(
        source: Int, rates: [Int: Double], now: ContinuousClock.Instant = .now,
        patience: Duration = .seconds(1), minimum: Int64 = 64 << 10
    ) -> (id: Int, range: Range<Int64>)? {
        guard let mine = rates[source], mine > 0 else { return trial(source: source, now: now) }
        var best: (id: Int, left: Double)?
        for (id, a) in active where a.source != source && a.end - a.next >= minimum {
            guard mayServe(source, piece: piece(at: a.next)) else { continue }
            let rest = Double(a.end - a.next)
            let theirs = rates[a.source] ?? 0
            let left: Double
            if theirs > 0 {
                left = rest / theirs
            } else {
                guard now - a.begun >= patience else { continue }
                left = .infinity
            }
            // Worth it when this source would end the span in well under the time its holder needs.
            guard left > rest / mine * 1.5 + 0.5 else { continue }
            if left > (best?.left ?? -1) { best = (id, left) }
        }
        guard let best, var victim = active[best.id] else { return nil }
        var cut = victim.next
        let victimEnd = victim.end
        // A piece to be fetched whole is left to its holder.
        let cutPiece = range(ofPiece: piece(at: cut))
        if whole.contains(piece(at: cut)), cut > cutPiece.lowerBound { cut = min(victimEnd, cutPiece.upperBound) }
        var end = victimEnd
        // Never into a piece `source` may not serve: that part goes back to pending for another.
        var probe = cut
        while probe < end {
            let p = piece(at: probe)
            if !mayServe(source, piece: p) {
                end = max(cut, range(ofPiece: p).lowerBound)
                break
            }
            probe = range(ofPiece: p).upperBound
        }
        guard cut < end else { return nil }
        victim.end = cut
        active[best.id] = victim
        if end < victimEnd { giveBack(end..<victimEnd) }
        return open(source: source, cut..<end, now: now)
    }

    /// A source with no rate yet (one that joins when every byte is taken) takes the last piece of the span with
    /// the most left, so that it is measured; it steals like the others once its rate is known. Only while it has
    /// no request of its own, and only from a span that keeps at least a piece besides.
    private mutating func trial(source: Int, now: ContinuousClock.Instant) -> (id: Int, range: Range<Int64>)? {
        guard !active.values.contains(where: { $0.source == source }) else { return nil }
        var best: (id: Int, tail: Int64, left: Int64)?
        for (id, a) in active where a.source != source && a.end > a.next {
            let tail = range(ofPiece: piece(at: a.end - 1)).lowerBound
            guard tail - a.next >= pieceLength, mayServe(source, piece: piece(at: tail)) else { continue }
            if a.end - a.next > best?.left ?? 0 { best = (id, tail, a.end - a.next) }
        }
        guard let best, var victim = active[best.id] else { return nil }
        let end = victim.end
        victim.end = best.tail
        active[best.id] = victim
        return open(source: source, best.tail..<end, now: now)
    }

    /// Reserves the next `count` bytes of request `id`: the range to write, empty when the request was cut
    /// there or is over.
    mutating func reserve(_ id: Int, count: Int64) -> Range<Int64> {
        guard var a = active[id], count > 0, a.next < a.end else { return 0..<0 }
        let upper = min(a.end, a.next + count)
        let range = a.next..<upper
        a.next = upper
        active[id] = a
        return range
    }

    /// `range` (reserved by `id`, beginning where it last wrote) is written: the pieces it completed.
    mutating func wrote(_ id: Int, _ range: Range<Int64>) -> [Int] {
        guard var a = active[id], !range.isEmpty, range.lowerBound == a.done else { return [] }
        a.done = range.upperBound
        active[id] = a
        var complete: [Int] = []
        for p in pieces(of: range) {
            let piece = self.range(ofPiece: p)
            let overlap = max(piece.lowerBound, range.lowerBound)..<min(piece.upperBound, range.upperBound)
            guard !overlap.isEmpty else { continue }
            filled[p] += Int64(overlap.count)
            contributors[p, default: [:]][a.source, default: 0] += Int64(overlap.count)
            Self.add(overlap, to: &spans[p, default: [:]][a.source, default: []])
            started.insert(p)
            if filled[p] == Int64(piece.count) { complete.append(p) }
        }
        return complete
    }

    /// Request `id` is over: what it did not write goes back to pending. A piece to be fetched whole (`whole`)
    /// that it left part way goes back whole: that piece, the bytes of it that were written and are dropped,
    /// and who wrote them, are returned.
    @discardableResult
    mutating func finish(_ id: Int) -> (piece: Int, dropped: Int64, bySource: [Int: Int64])? {
        guard let a = active.removeValue(forKey: id), a.done < a.end else { return nil }
        let p = piece(at: a.done)
        let begun = range(ofPiece: p)
        guard whole.contains(p), a.done > begun.lowerBound, !verified[p] else {
            giveBack(a.done..<a.end)
            return nil
        }
        let dropped = filled[p]
        filled[p] = 0
        let bySource = contributors.removeValue(forKey: p) ?? [:]
        spans[p] = nil
        started.remove(p)
        carried[p] = nil
        giveBack(begun.lowerBound..<a.end)
        return (p, dropped, bySource)
    }

    /// Whether request `id` still has bytes to reserve.
    func isOpen(_ id: Int) -> Bool { active[id].map { $0.next < $0.end } ?? false }

    /// Piece `piece` matched its hash. Returns the writers of its earlier failed copies (`Suspect`), to be checked
    /// against the bytes that matched.
    @discardableResult
    mutating func verifiedPiece(_ piece: Int) -> [Suspect] {
        guard piece < pieceCount, !verified[piece] else { return [] }
        verified[piece] = true
        verifiedCount += 1
        contributors[piece] = nil
        spans[piece] = nil
        whole.remove(piece)
        started.remove(piece)
        carried[piece] = nil
        return suspects.removeValue(forKey: piece) ?? []
    }

    /// Piece `piece` did not match: all of it is pending again. The source that wrote it alone is refused for
    /// it; a piece written by several (or partly by an earlier run) blames none yet and is fetched again whole by
    /// one request (`whole`), which then answers for it alone. `written` holds, for such a piece, the CRC-32C of
    /// each span this run's sources wrote of the failed copy (`spansWritten`, read back before the piece is
    /// written again): they are kept as `suspects` until the piece matches. Returns the sources that wrote it.
    @discardableResult
    mutating func failedPiece(_ piece: Int, written: [Int: [UInt32]] = [:]) -> Set<Int> {
        guard piece < pieceCount else { return [] }
        let sources = Set((contributors.removeValue(forKey: piece) ?? [:]).keys)
        let bySource = spans.removeValue(forKey: piece) ?? [:]
        if sources.count > 1 {
            whole.insert(piece)
            for (source, list) in bySource.sorted(by: { $0.key < $1.key }) {
                guard let crcs = written[source], crcs.count == list.count else { continue }
                suspects[piece, default: []].append(Suspect(source: source, spans: list, crcs: crcs))
            }
        } else {
            refused[piece, default: []].formUnion(sources)
        }
        filled[piece] = 0
        started.remove(piece)
        carried[piece] = nil
        giveBack(range(ofPiece: piece))
        return sources
    }

    /// `source` may be asked for `piece` again although it sent it wrong (the last source left).
    mutating func forgive(_ source: Int, piece: Int) {
        refused[piece]?.remove(source)
        if refused[piece]?.isEmpty == true { refused[piece] = nil }
    }

    /// The bytes each source wrote of `piece` while it is being filled (`earlierRun`: a resumed partial's).
    func bytesWritten(ofPiece piece: Int) -> [Int: Int64] { contributors[piece] ?? [:] }

    /// The spans each of this run's sources wrote of `piece` while it is being filled, sorted and disjoint.
    func spansWritten(ofPiece piece: Int) -> [Int: [Range<Int64>]] { spans[piece] ?? [:] }

    /// Bytes no request holds.
    var pendingBytes: Int64 { pending.reduce(0) { $0 + Int64($1.count) } }

    // MARK: - Private

    private mutating func open(source: Int, _ range: Range<Int64>, now: ContinuousClock.Instant) -> (
        id: Int, range: Range<Int64>
    ) {
        nextID += 1
        active[nextID] = Active(
            source: source, done: range.lowerBound, next: range.lowerBound, end: range.upperBound, begun: now)
        return (nextID, range)
    }

    /// Adds `range`, which begins at or after every pending byte, to the end of `pending`.
    private mutating func appendPending(_ range: Range<Int64>) {
        guard !range.isEmpty else { return }
        if let last = pending.last, last.upperBound >= range.lowerBound {
            pending[pending.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
        } else {
            pending.append(range)
        }
    }

    /// Adds `range` to `list` (sorted and disjoint), joined to the spans it touches: a source's connections that
    /// write one piece in turn keep a span each, not one per write.
    static func add(_ range: Range<Int64>, to list: inout [Range<Int64>]) {
        guard !range.isEmpty else { return }
        var index = list.count
        while index > 0, list[index - 1].lowerBound > range.lowerBound { index -= 1 }
        var joined = range
        if index > 0, list[index - 1].upperBound >= joined.lowerBound {
            index -= 1
            joined = list[index].lowerBound..<max(list[index].upperBound, joined.upperBound)
            list.remove(at: index)
        }
        while index < list.count, list[index].lowerBound <= joined.upperBound {
            joined = joined.lowerBound..<max(list[index].upperBound, joined.upperBound)
            list.remove(at: index)
        }
        list.insert(joined, at: index)
    }

    /// `ranges` sorted, the empty ones left out and the overlapping or touching ones joined.
    static func merged(_ ranges: [Range<Int64>]) -> [Range<Int64>] {
        var out: [Range<Int64>] = []
        for range in ranges.filter({ !$0.isEmpty }).sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = out.last, last.upperBound >= range.lowerBound {
                out[out.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                out.append(range)
            }
        }
        return out
    }

    private mutating func giveBack(_ range: Range<Int64>) { Self.add(range, to: &pending) }
}
