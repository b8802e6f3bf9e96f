/// The sources of one file and what identifies it (docs/mirrors.md): several URLs (`get URL1 URL2`,
/// `--mirror`), a Metalink file's URLs, size and hashes, or a Metalink file to read first. The identity of
/// the content is its size and hashes, never one server's ETag: each source keeps its own validator.
public struct MirrorSet: Sendable, Equatable {
    /// One place the file is served from.
    public struct Source: Sendable, Equatable {
        public var url: String
        /// Lower is preferred (Metalink's `priority`); nil after every source that has one.
        public var priority: Int?
        /// ISO 3166 country code, lower case, when the Metalink file says.
        public var location: String?

        public init(url: String, priority: Int? = nil, location: String? = nil) {
            self.url = url
            self.priority = priority
            self.location = location
        }
    }

    /// The sources, most preferred first.
    public var sources: [Source]
    /// The file's length when known before any request (Metalink's `size`).
    public var size: Int64?
    /// Whole-file digests (raw bytes).
    public var hashes: [Metalink.HashKind: [UInt8]]
    /// Per-piece digests: each piece is checked as it completes.
    public var pieces: Metalink.Pieces?
    /// A Metalink file to fetch and read when the run starts (`get --metalink URL`); its sources and hashes
    /// join these.
    public var metalinkURL: String?

    /// The most sources one download uses (the rest are ignored, said in a warning).
    public static let maxSources = 16

    public init(
        sources: [Source], size: Int64? = nil, hashes: [Metalink.HashKind: [UInt8]] = [:],
        pieces: Metalink.Pieces? = nil, metalinkURL: String? = nil
    ) {
        self.sources = sources
        self.size = size
        self.hashes = hashes
        self.pieces = pieces
        self.metalinkURL = metalinkURL
    }

    /// The set a Metalink file's `file` describes, with `extra` URLs (given on the command line) after its own.
    public init(file: Metalink.File, extra: [String] = []) {
        self.init(
            sources: file.sources.map { Source(url: $0.url, priority: $0.priority, location: $0.location) },
            size: file.size, hashes: file.hashes, pieces: file.pieces)
        add(extra.map { Source(url: $0) })
    }

    /// Adds sources not already in the set (the same URL once), keeping the order by priority.
    public mutating func add(_ more: [Source]) {
        for source in more where !sources.contains(where: { $0.url == source.url }) {
            sources.append(source)
        }
        sources = Self.ordered(sources)
    }

    /// Sources by priority (stable: sources without one keep their order, after those with one).
    static func ordered(_ sources: [Source]) -> [Source] {
        sources.enumerated().sorted { a, b in
            switch (a.element.priority, b.element.priority) {
            case (let x?, let y?) where x != y: return x < y
            case (.some, nil): return true
            case (nil, .some): return false
            default: return a.offset < b.offset
            }
        }.map(\.element)
    }
}
