/// The sizes Meterwise does arithmetic on: every size and offset from a server, a checkpoint or the API
/// is checked against this bound first, so no sum or product of them can overflow.
public enum ObjectLimits {
    /// 1 PiB: larger than any object a download engine meets, small enough that `16 * maxBytes` fits.
    public static let maxBytes: Int64 = 1 << 50
    /// Chunk sizes a checkpoint may use: a 1-byte chunk would make a small file cost gigabytes of hashes.
    public static let minChunk: Int64 = 64 << 10
    public static let maxChunk: Int64 = 1 << 30
    /// Pieces a checkpoint may list.
    public static let maxPieces: Int64 = 1 << 20
    /// Pieces one chunk may hold in a checkpoint: one per writer that wrote part of it (`PartialFile`).
    public static let piecesPerChunk: Int64 = 8

    static func tooLarge(_ what: String) -> TransferError {
        TransferError(
            .protocolViolation,
            "The server's \(what) claims more than 1 PiB; that is not a real object. Check the URL or the server.")
    }
}

/// A parsed `Content-Range: bytes first-last/total` (RFC 9110 §14.4). `total` is nil for `*`.
public struct ContentRange: Sendable, Equatable {
    /// First byte offset, inclusive.
    public var first: Int64
    /// Last byte offset, inclusive.
    public var last: Int64
    /// The complete length, when the server knows it.
    public var total: Int64?

    /// Creates a range.
    public init(first: Int64, last: Int64, total: Int64?) {
        self.first = first
        self.last = last
        self.total = total
    }

    /// Parses the header value; nil when it is not a satisfied byte range.
    public init?(header: String) {
        var s = Substring(header)
        while s.first == " " { s = s.dropFirst() }
        guard s.hasPrefix("bytes ") else { return nil }
        s = s.dropFirst(6)
        guard let slash = s.firstIndex(of: "/"), let dash = s[..<slash].firstIndex(of: "-") else { return nil }
        guard let first = Int64(s[..<dash]), let last = Int64(s[s.index(after: dash)..<slash]) else { return nil }
        let totalText = s[s.index(after: slash)...].trimmingCharacters(" ")
        let total: Int64?
        if totalText == "*" {
            total = nil
        } else {
            guard let t = Int64(totalText) else { return nil }
            total = t
        }
        guard first >= 0, last >= first else { return nil }
        if let total, last >= total { return nil }
        self.init(first: first, last: last, total: total)
    }

    /// The number of bytes in the range.
    public var length: Int64 { last - first + 1 }

    /// The `*/total` form of a 416 answer.
    public static func unsatisfiedTotal(header: String) -> Int64? {
        guard header.hasPrefix("bytes */") else { return nil }
        return Int64(header.dropFirst(8).trimmingCharacters(" "))
    }
}

extension Substring {
    func trimmingCharacters(_ c: Character) -> Substring {
        var s = self
        while s.first == c { s = s.dropFirst() }
        while s.last == c { s = s.dropLast() }
        return s
    }
}
