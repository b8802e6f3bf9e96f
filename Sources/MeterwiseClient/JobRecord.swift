import Foundation

/// Where a job is in its life. `paused` is the user's pause; a policy pause is `waiting`.
public enum JobState: String, Sendable, Codable, Hashable, CaseIterable {
    /// Not started yet: waiting for the policy to allow it.
    case queued
    /// A transfer is running.
    case running
    /// Stopped by the policy (metered link, time window, budget); resumes by itself.
    case waiting
    /// Paused by the user; resumes only when the user says so.
    case paused
    case completed
    case failed
    case cancelled

    /// Completed, failed or cancelled: nothing more happens to the job.
    public var isFinal: Bool { self == .completed || self == .failed || self == .cancelled }
}

/// One download job as the store keeps it. Every field survives a restart.
public struct JobRecord: Sendable, Codable, Hashable {

    public var id: String
    public var url: String
    public var headURL: String?
    public var destination: String
    public var expectedSHA256: String?
    public var size: Int64?
    public var priority: Int
    public var tags: [String]
    public var allowMetered: Bool
    public var allowRoaming: Bool?
    public var segments: Int?
    public var state: JobState
    public var bytesDone: Int64
    public var totalBytes: Int64?
    public var bytesFetched: Int64
    public var refetchedBytes: Int64
    /// Bytes received and thrown away over every run: read past what was needed, or still arriving when a
    /// transfer was stopped (a pause). Nil only from a daemon older than this field.
    public var discardedBytes: Int64?
    public var sha256: String?
    /// The matched rule and reasons of the last decision, for `status`.
    public var rule: String?
    public var reason: String?
    public var error: String?
    /// The checkpoint beside the partial file (derived from the destination, kept for reference).
    public var checkpointPath: String
    /// The uid and gid of the user who added the job (from the control socket's peer credentials); the
    /// job's files are theirs. Nil for jobs stored before owners were recorded: the daemon's own.
    public var ownerUID: UInt32?
    public var ownerGID: UInt32?
    /// The largest object the job accepts (`max_size`); nil: no limit of its own.
    public var maxSize: Int64?
    /// How many times in a row the daemon died while this job's transfer ran without saving progress;
    /// at 2 the job is failed instead of taking the daemon down again.
    public var interruptions: Int
    /// TLS files (read with the owner's rights each time the transfer starts) and the proxy of the job;
    /// see `JobSpec`.
    public var caFile: String?
    public var certFile: String?
    public var keyFile: String?
    public var proxy: String?
    /// `background` or `foreground` as the job asked (`JobSpec.mode`); nil: as the policy says, background
    /// by default (docs/background.md).
    public var mode: String?
    /// A delta job's control file (docs/delta.md): its URL or path, or `""` for the URL with `.zsync` appended;
    /// nil: not a delta job.
    public var zsync: String?
    /// A delta job's seeds besides its destination.
    public var seeds: [String]?
    /// A delta job's bytes to fetch, once its seeds are scanned: what its policy decisions and budgets see.
    public var deltaBytes: Int64?
    /// A job's other URLs of the same file (docs/mirrors.md).
    public var mirrors: [String]?
    /// A job's Metalink file: its URL or absolute path.
    public var metalink: String?
    /// Whether the job speaks HTTP/2 where its https server offers it (`JobSpec.http2`); nil: HTTP/1.1.
    public var http2: Bool?
    /// A job with several sources: what each delivered, and why one was dropped, as its transfer last said
    /// (every second while it runs, and at its end); nil for a job with one source.
    public var sources: [SourceFigures]?
    public var createdAt: Date
    public var updatedAt: Date

    /// Column names and JSON keys alike are snake_case (docs/api.md).
    public enum CodingKeys: String, CodingKey, CaseIterable {
        case id, url, destination, size, priority, tags, segments, state, sha256, rule, reason, error
        case headURL = "head_url", expectedSHA256 = "expected_sha256", allowMetered = "allow_metered"
        case allowRoaming = "allow_roaming", bytesDone = "bytes_done", totalBytes = "total_bytes"
        case bytesFetched = "bytes_fetched", refetchedBytes = "refetched_bytes", checkpointPath = "checkpoint_path"
        case createdAt = "created_at", updatedAt = "updated_at", ownerUID = "owner_uid", ownerGID = "owner_gid"
        case maxSize = "max_size", interruptions, discardedBytes = "discarded_bytes"
        case caFile = "ca_file", certFile = "cert_file", keyFile = "key_file", proxy, mode
        case zsync, seeds, deltaBytes = "delta_bytes", mirrors, metalink, sources, http2
    }

    /// The size the policy decides on: a delta job's bytes to fetch, else the server's length, else the size
    /// the job declared.
    public var policySize: Int64? { deltaBytes ?? totalBytes ?? size }

    public init(
        id: String, url: String, destination: String, headURL: String? = nil, expectedSHA256: String? = nil,
        size: Int64? = nil, priority: Int = 0, tags: [String] = [], allowMetered: Bool = false,
        allowRoaming: Bool? = nil, segments: Int? = nil, checkpointPath: String? = nil, ownerUID: UInt32? = nil,
        ownerGID: UInt32? = nil, maxSize: Int64? = nil, now: Date = Date()
    ) {
        self.id = id
        self.url = url
        self.headURL = headURL
        self.destination = destination
        self.expectedSHA256 = expectedSHA256
        self.size = size
        self.priority = priority
        self.tags = tags
        self.allowMetered = allowMetered
        self.allowRoaming = allowRoaming
        self.segments = segments
        self.state = .queued
        self.bytesDone = 0
        self.totalBytes = nil
        self.bytesFetched = 0
        self.refetchedBytes = 0
        self.discardedBytes = 0
        self.checkpointPath = checkpointPath ?? destination + ".part.checkpoint"
        self.ownerUID = ownerUID
        self.ownerGID = ownerGID
        self.maxSize = maxSize
        self.interruptions = 0
        self.createdAt = now
        self.updatedAt = now
    }
}
