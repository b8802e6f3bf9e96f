/// Which byte ranges are still to fetch and which segment fetches what: a pure value.
///
/// The first split is aligned to `chunkSize`, later steals to `grain`; a chunk split between two segments
/// keeps each one's part as a run of its own (`PartialFile`). A segment asks for its assignment one request
/// at a time (`request(segment:span:)`, sized by `RequestSpan`); an idle segment first cuts into a request
/// too slow to wait for, else steals the upper half of the largest remaining assignment, but never a byte
/// another segment has already asked for: no response is cut short without cause, so nothing is received
/// twice (docs/get.md, "Segments").
public struct RangePlan: Sendable, Equatable {
    /// One segment's current work: `next` is the next byte to receive, `end` is exclusive.
    public struct Assignment: Sendable, Equatable {
        /// The next byte to receive.
        public var next: Int64
        /// The end of the assignment, exclusive.
        public var end: Int64
        /// The end (exclusive) of what the segment's request in flight asked for; `next` or less when none is.
        public var requested: Int64 = 0
        /// Bytes left in this assignment.
        public var remaining: Int64 { max(0, end - next) }
        /// Bytes left that no request asked for yet: what another segment may take.
        public var unrequested: Int64 { max(0, end - max(next, requested)) }

        /// An assignment with no request in flight.
        public init(next: Int64, end: Int64, requested: Int64 = 0) {
            self.next = next
            self.end = end
            self.requested = requested
        }
    }

    /// `end` of an assignment while the object's length is unknown.
    public static let unknownEnd = Int64.max

    /// The object's length, when known.
    public private(set) var total: Int64?
    /// Alignment of the first split.
    public let chunkSize: Int64
    /// Alignment of steals, and half the least an assignment must have left to lose its upper half: a
    /// chunk, at most 1 MiB.
    public var grain: Int64 { min(chunkSize, 1 << 20) }
    /// Work not yet assigned, in offset order.
    public private(set) var pending: [Range<Int64>]
    /// Work assigned to segments, by segment id.
    public private(set) var active: [Int: Assignment] = [:]

    /// A plan for `missing` ranges of an object of `total` bytes (nil: unknown, fetch `0...`).
    public init(total: Int64?, missing: [Range<Int64>], chunkSize: Int64) {
        self.total = total
        self.chunkSize = max(1, chunkSize)
        self.pending = missing.filter { !$0.isEmpty }
    }

    /// A plan for a fresh download of unknown length.
    public static func fresh(chunkSize: Int64) -> RangePlan {
        RangePlan(total: nil, missing: [0..<unknownEnd], chunkSize: chunkSize)
    }

    /// True when nothing is pending and every assignment is done.
    public var isComplete: Bool {
        pending.isEmpty && active.values.allSatisfy { $0.remaining == 0 }
    }

    /// Bytes not yet received.
    public var remainingBytes: Int64 {
        pending.reduce(0) { $0 + Int64($1.count) } + active.values.reduce(0) { $0 + $1.remaining }
    }

    /// Cuts the pending work into `parts` pieces of about equal size, at chunk boundaries.
    public mutating func split(into parts: Int) {
        let total = pending.reduce(Int64(0)) { $0 + Int64($1.count) }
        guard parts > 1, total > 0 else { return }
        var pieces: [Range<Int64>] = []
        var consumed: Int64 = 0
        var k: Int64 = 1
        for gap in pending {
            var start = gap.lowerBound
            while k < Int64(parts) {
                let into = k * total / Int64(parts) - consumed
                guard into < Int64(gap.count) else { break }
                let cut = alignNearest(gap.lowerBound + into)
                k += 1
                if cut > start, cut < gap.upperBound {
                    pieces.append(start..<cut)
                    start = cut
                }
            }
            pieces.append(start..<gap.upperBound)
            consumed += Int64(gap.count)
        }
        pending = pieces
    }

    /// The object's length became known from the first response: unknown ends become `total`, and
    /// the remaining work of the one active segment is split into `parts` (the others to pending).
    public mutating func learnTotal(_ total: Int64, parts: Int) {
        self.total = total
        pending = pending.compactMap { r in
            let upper = min(r.upperBound, total)
            return r.lowerBound < upper ? r.lowerBound..<upper : nil
        }
        for (id, a) in active where a.end > total {
            active[id]!.end = total
            active[id]!.requested = min(a.requested, total)
        }
        guard parts > 1, active.count == 1, let (id, a) = active.first, a.remaining > 0 else { return }
        var rest = RangePlan(total: total, missing: [a.next..<a.end], chunkSize: chunkSize)
        rest.split(into: parts)
        guard let first = rest.pending.first else { return }
        // The first request's bounded ask stays the first segment's, whatever the split says.
        let keep = max(first.upperBound, a.requested)
        active[id]!.end = keep
        let others = rest.pending.dropFirst().compactMap { r -> Range<Int64>? in
            let lower = max(r.lowerBound, keep)
            return lower < r.upperBound ? lower..<r.upperBound : nil
        }
        pending = others + pending
    }

    /// Marks `segment`'s next request as asking for `span` bytes from its next byte (nil, or more than is
    /// left: to the end of its assignment); returns the asked range's end, exclusive (`unknownEnd` for an
    /// open-ended ask).
    public mutating func request(segment: Int, span: Int64?) -> Int64 {
        guard var a = active[segment] else { return 0 }
        var upper = a.end
        if let span, span > 0, span < a.end - a.next { upper = a.next + span }
        a.requested = upper
        active[segment] = a
        return upper
    }

    /// `segment`'s request ended (completed, failed or abandoned): none is in flight.
    public mutating func endRequest(segment: Int) {
        guard var a = active[segment] else { return }
        a.requested = a.next
        active[segment] = a
    }

    /// Gives `segment` its next range: pending work first; else the rest of a request in `slow` (segments
    /// whose request in flight would take too long to wait for, `DownloadBoard`, each with the bytes it keeps:
    /// what it should receive before the cut takes effect), the one with most left, whose request then ends
    /// there; else the upper half of the largest assignment (at least two grains must remain there), never
    /// what the victim's request in flight asked for. Nil when there is nothing left to take.
    public mutating func assign(segment: Int, slow: [Int: Int64] = [:]) -> Assignment? {
        if let a = active[segment], a.remaining > 0 { return a }
        if !pending.isEmpty {
            let r = pending.removeFirst()
            let a = Assignment(next: r.lowerBound, end: r.upperBound)
            active[segment] = a
            return a
        }
        let cuttable = active.filter { $0.key != segment && slow[$0.key] != nil && isCuttable($0.value) }
        if let (victim, va) = cuttable.max(by: { $0.value.remaining < $1.value.remaining }),
            let a = take(from: victim, at: va.next + min(max(0, slow[victim]!), va.remaining - 1))
        {
            active[segment] = a
            return a
        }
        let victims = active.filter { $0.key != segment && isSplittable($0.value) }
        if let (victim, va) = victims.max(by: { $0.value.unrequested < $1.value.unrequested }),
            let a = take(
                from: victim, at: max(alignUp(va.next + va.remaining / 2), alignUp(max(va.next, va.requested))))
        {
            active[segment] = a
            return a
        }
        active[segment] = nil
        return nil
    }

    /// Whether another segment than `segment` has a request in flight that `assign` could cut into, were it
    /// too slow.
    public func hasRequestToCut(besides segment: Int) -> Bool {
        active.contains { $0.key != segment && $0.value.requested > $0.value.next && isCuttable($0.value) }
    }

    /// Whether an assignment may lose its upper half to an idle segment: a known end, two grains left.
    private func isSplittable(_ a: Assignment) -> Bool {
        a.end != Self.unknownEnd && a.remaining >= 2 * grain
    }

    /// Whether a request in flight may be cut: a known end and more than one byte left.
    private func isCuttable(_ a: Assignment) -> Bool {
        a.end != Self.unknownEnd && a.remaining > 1
    }

    /// Ends `victim`'s assignment at `cut` and returns the rest as a new assignment; nil when `cut` is not
    /// inside what it has left (its next byte counts: a cut there leaves it nothing).
    private mutating func take(from victim: Int, at cut: Int64) -> Assignment? {
        guard let va = active[victim], cut >= va.next, cut < va.end else { return nil }
        active[victim]!.end = cut
        active[victim]!.requested = min(va.requested, cut)
        return Assignment(next: cut, end: va.end)
    }

    /// Records that `segment` received bytes up to `position`.
    public mutating func advance(segment: Int, to position: Int64) {
        guard var a = active[segment] else { return }
        a.next = min(max(a.next, position), a.end)
        active[segment] = a
    }

    /// The current end of `segment`'s assignment (it shrinks when another segment steals).
    public func end(of segment: Int) -> Int64 { active[segment]?.end ?? 0 }

    /// The next byte `segment` should receive.
    public func next(of segment: Int) -> Int64 { active[segment]?.next ?? 0 }

    /// Returns `segment`'s unfinished work to pending (the segment stops).
    public mutating func release(segment: Int) {
        guard let a = active.removeValue(forKey: segment) else { return }
        if a.remaining > 0 {
            pending.append(a.next..<a.end)
            pending.sort { $0.lowerBound < $1.lowerBound }
        }
    }

    func alignNearest(_ value: Int64) -> Int64 {
        let down = value - value % chunkSize
        return value - down >= chunkSize / 2 ? down + chunkSize : down
    }

    func alignUp(_ value: Int64) -> Int64 {
        let r = value % grain
        return r == 0 ? value : value + (grain - r)
    }

    /// The complement of `have` (sorted, non-overlapping) within `0..<total`.
    public static func missing(total: Int64, have: [Range<Int64>]) -> [Range<Int64>] {
        var out: [Range<Int64>] = []
        var at: Int64 = 0
        for r in have.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if r.lowerBound > at { out.append(at..<min(r.lowerBound, total)) }
            at = max(at, r.upperBound)
            if at >= total { break }
        }
        if at < total { out.append(at..<total) }
        return out.filter { !$0.isEmpty }
    }
}
