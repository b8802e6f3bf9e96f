/// The checkpoint beside the partial file: everything needed to resume, versioned (docs/checkpoint.md).
public struct Checkpoint: Codable, Sendable, Equatable {
    /// The format written by this version.
    public static let currentVersion = 1
    /// Always `meterwise-checkpoint`.
    public static let formatName = "meterwise-checkpoint"

    /// A verified piece of the partial file: a whole chunk, or the prefix of one that was being written.
    public struct Piece: Codable, Sendable, Equatable {
        /// Offset of the piece (a multiple of `chunkSize`).
        public var offset: Int64
        /// Its length; equal to the chunk's length when the chunk is complete.
        public var length: Int64
        /// sha256 of those bytes, lower-case hex.
        public var sha256: String

        /// Creates a piece.
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
    /// The GET URL, query intact (it may carry a signature: the file is created 0600).
    public var url: String
    /// The final path.
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

    /// Bytes covered by pieces.
    public var bytesDone: Int64 { pieces.reduce(0) { $0 + $1.length } }
}
