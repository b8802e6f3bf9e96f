#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The checkpoint beside the partial file: everything needed to resume, versioned (docs/checkpoint.md).
public struct Checkpoint: Codable, Sendable, Equatable {
    /// The format written by this version: 2, whose pieces carry a CRC-32C.
    public static let currentVersion = 2
    /// The versions still resumed: 1 (pieces with a sha256) and 2.
    public static let readableVersions = 1...2
    /// Always `meterwise-checkpoint`.
    public static let formatName = "meterwise-checkpoint"

    /// A verified piece of the partial file: bytes one segment wrote in order within one chunk. Usually a whole
    /// chunk or the start of one being written; where a segment took over the rest of another's range inside a
    /// chunk, each one's part (at most `ObjectLimits.piecesPerChunk` in a chunk).
    ///
    /// It carries exactly one checksum of its bytes: `crc32c` (written since version 2) or `sha256`
    /// (version 1 checkpoints, still read).
    public struct Piece: Codable, Sendable, Equatable {
        /// Offset of the piece; the piece ends in the chunk it starts in.
        public var offset: Int64
        /// Its length; equal to the chunk's length when the chunk is complete.
        public var length: Int64
        /// CRC-32C (Castagnoli) of those bytes, 8 lower-case hex digits.
        public var crc32c: String?
        /// sha256 of those bytes, lower-case hex: the pieces of version 1 checkpoints.
        public var sha256: String?

        /// Creates a piece with a CRC-32C (8 lower-case hex digits).
        public init(offset: Int64, length: Int64, crc32c: String) {
            self.offset = offset
            self.length = length
            self.crc32c = crc32c
        }

        /// Creates a piece with a sha256, as version 1 wrote them.
        public init(offset: Int64, length: Int64, sha256: String) {
            self.offset = offset
            self.length = length
            self.sha256 = sha256
        }
    }

    /// A segment's assignment at checkpoint time (informational; resuming uses `pieces`).
    public struct SegmentRecord: Codable, Sendable, Equatable {
        /// The next byte the segment would have fetched.
        public var start: Int64
        /// The end of its assignment, exclusive.
        public var end: Int64
    }

    /// Always `meterwise-checkpoint`.
    public var format: String
    /// The format version (`currentVersion` when written by this code).
    public var version: Int
    /// The GET URL with its credentials and query redacted (`RedactedURL.redact`): enough to tell a checkpoint
    /// for another URL, no password or presigned signature. Checkpoints written before 2026-11-27 hold it intact
    /// (the file is created 0600).
    public var url: String
    /// The final path, absolute (the directory as the kernel resolved it). Checkpoints written before
    /// 2026-11 hold the path as typed, possibly relative (see `isFor(destination:)`).
    public var destination: String
    /// The object's validators from the first response.
    public var validators: Validators
    /// The object's length, when known.
    public var totalBytes: Int64?
    /// Whether the server answered a range request with 206.
    public var acceptRanges: Bool
    /// The chunk size of `pieces`.
    public var chunkSize: Int64
    /// Assignments per segment when the checkpoint was written.
    public var segments: [SegmentRecord]
    /// Verified data in the partial file, in offset order.
    public var pieces: [Piece]
    /// The server's ETag changed between requests although the bytes did not (proved by samples of what
    /// is on disk, `ContentCheck`): `validators` then hold only Last-Modified, if the server keeps it, and a
    /// resume proves the content again before it trusts the partial. Absent (nil) otherwise.
    public var unstableETag: Bool?
    /// The object's Content-Type as its server said it, when it did: an HTML page where the object is not one
    /// is a captive portal's (`Interception`). Absent in checkpoints written before 2026-11-26.
    public var contentType: String?
    /// Where the bytes came from: the URL that answered the first body (after redirects), credentials and query
    /// left out (`AnswerPath.place`). A
    /// whole answer to a range request from elsewhere is not the object's server. Absent before 2026-11-26.
    public var source: String?

    /// Keys are snake_case like every JSON Meterwise writes; `CheckpointFile` still reads the camelCase
    /// keys of older checkpoints.
    enum CodingKeys: String, CodingKey {
        case format, version, url, destination, validators, segments, pieces
        case totalBytes = "total_bytes", acceptRanges = "accept_ranges", chunkSize = "chunk_size"
        case unstableETag = "unstable_etag"
        case contentType = "content_type", source
    }

    /// Creates a checkpoint of the current version.
    public init(
        url: String, destination: String, validators: Validators, totalBytes: Int64?, acceptRanges: Bool,
        chunkSize: Int64, segments: [SegmentRecord], pieces: [Piece]
    ) {
        self.format = Self.formatName
        self.version = Self.currentVersion
        self.url = url
        self.destination = destination
        self.validators = validators
        self.totalBytes = totalBytes
        self.acceptRanges = acceptRanges
        self.chunkSize = chunkSize
        self.segments = segments
        self.pieces = pieces
    }

    /// Whether this checkpoint belongs to the download of `destination` (an absolute path). A relative
    /// `destination` comes from a release that stored the path as typed (`-o g`); the checkpoint was found
    /// beside the partial file in the destination's own directory, so only the file name can still
    /// disagree, and it is all that is compared.
    public func isFor(destination: String) -> Bool {
        if self.destination.hasPrefix("/") { return self.destination == destination }
        return FileIO.name(of: self.destination) == FileIO.name(of: destination)
    }

    /// Bytes covered by pieces.
    public var bytesDone: Int64 { pieces.reduce(0) { $0 + $1.length } }

    /// Decodes a checkpoint file, today's snake_case keys or the camelCase keys older versions wrote
    /// (`totalBytes`, `chunkSize`, ...), so a partial download from an older version still resumes.
    public static func decode(_ data: Data) throws -> Checkpoint {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .custom { path in
            LegacyKey(snakeCase(path.last?.stringValue ?? ""))
        }
        return try decoder.decode(Checkpoint.self, from: data)
    }

    /// `chunkSize` -> `chunk_size`; snake_case keys are returned as they are.
    static func snakeCase(_ key: String) -> String {
        var out = ""
        for character in key {
            if character.isUppercase {
                if !out.isEmpty { out.append("_") }
                out += character.lowercased()
            } else {
                out.append(character)
            }
        }
        return out
    }

    private struct LegacyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
