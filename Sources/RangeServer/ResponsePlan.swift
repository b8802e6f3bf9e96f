/// What the server answers to one request, decided from the request and the current object and faults.
struct ResponsePlan: Sendable {
    var status: Int
    var headers: [(String, String)]
    var content: RangeContent?
    /// Body range, end exclusive.
    var start: Int64 = 0
    var end: Int64 = 0
    /// Stop after this many body bytes (truncate or reset).
    var cutAfter: Int64?
    var reset = false
    var throttle: Int?
    /// Body bytes sent at once before `throttle` applies (`RangeFault.throttleAt`).
    var burst: Int64 = 0
    /// Send this many body bytes, then nothing for `seconds` (`RangeFault.stallAt`).
    var stall: (after: Int64, seconds: Double)?
    /// The object's bytes sent changed, where the body carries them (`RangeFault.corruptUnaligned`,
    /// `corruptRegion`); nil: none.
    var corrupt: Range<Int64>?
    var index: Int

    /// The request's headers that matter.
    struct Request: Sendable {
        var method: String
        var path: String = "/"
        var range: String?
        var ifMatch: String?
        var ifRange: String?
        var ifUnmodifiedSince: String?
    }

    /// Parses `bytes=a-b`, `bytes=a-`, `bytes=-n` against `size`; nil for a syntax the server ignores,
    /// `.unsatisfiable` when `a >= size`.
    enum ParsedRange: Equatable {
        case range(Int64, Int64)
        case unsatisfiable
    }

    static func parseRange(_ header: String, size: Int64) -> ParsedRange? {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return nil }
        let spec = header.dropFirst(6)
        guard let dash = spec.firstIndex(of: "-") else { return nil }
        let a = spec[..<dash]
        let b = spec[spec.index(after: dash)...]
        if a.isEmpty {
            guard let n = Int64(b), n > 0 else { return nil }
            return size == 0 ? .unsatisfiable : .range(max(0, size - n), size - 1)
        }
        guard let first = Int64(a) else { return nil }
        if first >= size { return .unsatisfiable }
        if b.isEmpty { return .range(first, size - 1) }
        guard let last = Int64(b), last >= first else { return nil }
        return .range(first, min(last, size - 1))
    }
}
