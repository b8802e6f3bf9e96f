import Foundation

/// What a new job asks for: `meterwise add` and the API's `POST /jobs`.
public struct JobSpec: Sendable, Codable, Hashable {
    public var url: String
    public var destination: String
    public var headURL: String?
    public var sha256: String?
    public var size: Int64?
    public var priority: Int
    public var tags: [String]
    public var allowMetered: Bool
    public var allowRoaming: Bool?
    public var segments: Int?
    /// The largest object accepted: a bigger one fails the job instead of filling the disk.
    public var maxSize: Int64?
    /// A PEM file of the only CAs trusted for this job's https server (read with the asking user's rights).
    public var caFile: String?
    /// A client certificate and its key (PEM) for servers that require one (mTLS).
    public var certFile: String?
    public var keyFile: String?
    /// The proxy for this job (`http://HOST:PORT`); `""` connects directly; nil uses the daemon's.
    public var proxy: String?
    /// `background` (give way to other traffic) or `foreground`; nil: as the policy says, background by
    /// default (docs/background.md).
    public var mode: String?
    /// The values `mode` may take.
    public static let modes = ["background", "foreground"]
    /// A delta download (docs/delta.md): take what the file at the destination and `seeds` already hold and fetch
    /// only the rest, guided by the zsync control file at `url` + `.zsync` (or `zsync_url`).
    public var zsync: Bool?
    /// The control file's http(s) URL or absolute path (read with the asking user's rights); implies `zsync`.
    public var zsyncURL: String?
    /// Older versions to take blocks from (absolute paths, read with the asking user's rights), at most 16.
    public var seeds: [String]?
    /// The most seeds a job may name.
    public static let maxSeeds = 16
    /// Other URLs of the same file (docs/mirrors.md): the job fetches from all of them at once. http(s)
    /// only, at most `maxMirrors`.
    public var mirrors: [String]?
    /// A Metalink file's http(s) URL or absolute path (read with the asking user's rights): its URLs, size,
    /// hashes and piece hashes join the job's.
    public var metalink: String?
    /// The most mirrors a job may name.
    public static let maxMirrors = 15
    /// Speak HTTP/2 where the https server offers it (ALPN): the job's segments become streams of one
    /// connection. Nil or false: HTTP/1.1 connections, faster here (docs/get.md, "HTTP/2").
    public var http2: Bool?

    /// Whether the job is a delta download.
    public var isDelta: Bool { zsync == true || zsyncURL != nil }

    public init(
        url: String, destination: String, headURL: String? = nil, sha256: String? = nil, size: Int64? = nil,
        priority: Int = 0, tags: [String] = [], allowMetered: Bool = false, allowRoaming: Bool? = nil,
        segments: Int? = nil, maxSize: Int64? = nil, caFile: String? = nil, certFile: String? = nil,
        keyFile: String? = nil, proxy: String? = nil
    ) {
        self.url = url
        self.destination = destination
        self.headURL = headURL
        self.sha256 = sha256
        self.size = size
        self.priority = priority
        self.tags = tags
        self.allowMetered = allowMetered
        self.allowRoaming = allowRoaming
        self.segments = segments
        self.maxSize = maxSize
        self.caFile = caFile
        self.certFile = certFile
        self.keyFile = keyFile
        self.proxy = proxy
    }

    /// Nil when every optional field is within bounds; otherwise what to fix. (The URL, the sha256 and the
    /// destination are checked by the daemon, with the checks `get` uses.)
    public var problem: String? {
        if let size, size < 0 || size > 1 << 50 { return "size must be a number of bytes from 0 to 2^50" }
        if let maxSize, maxSize < 0 || maxSize > 1 << 50 { return "max_size must be a number of bytes from 0 to 2^50" }
        if let segments, !(1...16).contains(segments) { return "segments must be from 1 to 16" }
        if !(-1_000_000...1_000_000).contains(priority) { return "priority must be from -1000000 to 1000000" }
        if let problem = Self.tagsProblem(tags) { return problem }
        if let headURL, headURL.utf8.count > 16384 { return "head_url is longer than 16 KiB" }
        if url.utf8.count > 16384 { return "url is longer than 16 KiB" }
        if destination.utf8.count > 4096 { return "destination is longer than 4096 bytes" }
        for (key, path) in [("ca_file", caFile), ("cert_file", certFile), ("key_file", keyFile)] {
            guard let path else { continue }
            if !path.hasPrefix("/") { return "\(key) must be an absolute path" }
            if path.utf8.count > 4096 { return "\(key) is longer than 4096 bytes" }
            if let area = Self.kernelArea(path) {
                return "\(key) may not be under \(area): give a PEM file of your own"
            }
        }
        if let area = Self.kernelArea(destination) {
            return "destination may not be under \(area): save it in a folder of your own"
        }
        if (certFile == nil) != (keyFile == nil) { return "cert_file and key_file go together: give both or neither" }
        if let proxy, proxy.utf8.count > 4096 { return "proxy is longer than 4096 bytes" }
        if let problem = deltaProblem { return problem }
        if let problem = mirrorProblem { return problem }
        if let mode, !Self.modes.contains(mode) {
            return "mode must be background or foreground, not \"\(ShownText.escaped(mode.prefix(40)))\""
        }
        // Paths are printed in other users' terminals (root's `list`): no escape sequences, no line breaks.
        if ShownText.hasControl(destination) {
            return "destination contains control characters; rename it"
        }
        return nil
    }

    /// Nil when the mirror fields are within bounds; otherwise what to fix.
    var mirrorProblem: String? {
        let remote = { (url: String) in
            let lower = url.lowercased()
            return lower.hasPrefix("http://") || lower.hasPrefix("https://")
        }
        if let mirrors {
            if mirrors.count > Self.maxMirrors { return "mirrors: \(mirrors.count) given, at most \(Self.maxMirrors)" }
            for mirror in mirrors {
                if !remote(mirror) { return "each mirror must be an http(s) URL" }
                if mirror.utf8.count > 16384 { return "a mirror's URL is longer than 16 KiB" }
                if ShownText.hasControl(mirror) { return "a mirror's URL contains control characters" }
            }
        }
        if let metalink {
            if !remote(metalink), !metalink.hasPrefix("/") {
                return "metalink must be an http(s) URL or an absolute path"
            }
            if metalink.utf8.count > 16384 { return "metalink is longer than 16 KiB" }
            if ShownText.hasControl(metalink) { return "metalink contains control characters" }
            if !remote(metalink), let area = Self.kernelArea(metalink) { return "metalink may not be under \(area)" }
        }
        if isDelta, !(mirrors ?? []).isEmpty || metalink != nil {
            return "a delta (zsync) takes one URL; mirrors and metalink are for whole downloads"
        }
        return nil
    }

    /// Nil when the delta fields are within bounds; otherwise what to fix.
    var deltaProblem: String? {
        if let seeds {
            if !isDelta, !seeds.isEmpty { return "seeds need zsync: seeds are read for a delta download only" }
            if seeds.count > Self.maxSeeds { return "seeds: \(seeds.count) given, at most \(Self.maxSeeds)" }
            for seed in seeds {
                if !seed.hasPrefix("/") { return "each seed must be an absolute path" }
                if seed.utf8.count > 4096 { return "a seed is longer than 4096 bytes" }
                if let area = Self.kernelArea(seed) { return "a seed may not be under \(area)" }
                if ShownText.hasControl(seed) { return "a seed's path contains control characters; rename it" }
            }
        }
        if let zsyncURL {
            let remote = zsyncURL.hasPrefix("http://") || zsyncURL.hasPrefix("https://")
            if !remote, !zsyncURL.hasPrefix("/") {
                return "zsync_url must be an http(s) URL or an absolute path"
            }
            if zsyncURL.utf8.count > 16384 { return "zsync_url is longer than 16 KiB" }
            if !remote, let area = Self.kernelArea(zsyncURL) { return "zsync_url may not be under \(area)" }
        }
        return nil
    }

    /// The most tags a job may carry, and the longest tag (bytes): a job's tags are kept in memory while it
    /// is unfinished and shown in other users' terminals (root's `list`).
    public static let maxTags = 16
    public static let maxTagBytes = 64

    /// Nil when `tags` are within bounds: at most `maxTags`, each 1 to `maxTagBytes` of ASCII letters,
    /// digits and `- _ . : / + @` (a comma separates tags in the API's queries). Otherwise what to fix.
    public static func tagsProblem(_ tags: [String]) -> String? {
        if tags.count > maxTags {
            return "tags: \(tags.count) given, at most \(maxTags) per job; keep the ones your policy matches"
        }
        for tag in tags {
            let shown = ShownText.escaped(tag.prefix(maxTagBytes + 1))
            if tag.isEmpty || tag.utf8.count > maxTagBytes {
                return "tag \"\(shown)\": a tag is 1 to \(maxTagBytes) bytes; shorten it"
            }
            if !tag.unicodeScalars.allSatisfy(isTagCharacter) {
                return "tag \"\(shown)\": use only letters, digits and - _ . : / + @"
            }
        }
        return nil
    }

    private static func isTagCharacter(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
            || "-_.:/+@".unicodeScalars.contains(scalar)
    }

    /// The kernel's own trees, when `path` is in one (`/proc`, `/dev`, `/sys`) as written, `.`, `..` and
    /// repeated slashes aside: a job's files may not be there. `/proc/self/fd/N` read by the daemon would
    /// answer differently for its open and closed descriptors, and `/dev/fd` and `/dev/stdin` lead there. Pure.
    public static func kernelArea(_ path: String) -> String? {
        var parts: [Substring] = []
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            if part == "." { continue }
            if part == ".." {
                _ = parts.popLast()
                continue
            }
            parts.append(part)
        }
        guard let first = parts.first, ["proc", "dev", "sys"].contains(first) else { return nil }
        return "/" + first
    }

    /// The JSON contract is snake_case (docs/api.md).
    public enum CodingKeys: String, CodingKey, CaseIterable {
        case url, destination, sha256, size, priority, tags, segments
        case headURL = "head_url", allowMetered = "allow_metered", allowRoaming = "allow_roaming", maxSize = "max_size"
        case caFile = "ca_file", certFile = "cert_file", keyFile = "key_file", proxy, mode
        case zsync, zsyncURL = "zsync_url", seeds, mirrors, metalink, http2
    }

    /// Only `url` and `destination` are required; everything else has its default. A key this version does
    /// not know is refused by name, so a typo (`sha_256`) cannot silently drop a check.
    public init(from decoder: any Decoder) throws {
        let known = Set(CodingKeys.allCases.map(\.rawValue))
        for key in try decoder.container(keyedBy: AnyCodingKey.self).allKeys where !known.contains(key.stringValue) {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: [key],
                    debugDescription: "unknown key \"\(key.stringValue)\"; known keys: "
                        + CodingKeys.allCases.map(\.rawValue).sorted().joined(separator: ", ")))
        }
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            url: try c.decode(String.self, forKey: .url),
            destination: try c.decode(String.self, forKey: .destination),
            headURL: try c.decodeIfPresent(String.self, forKey: .headURL),
            sha256: try c.decodeIfPresent(String.self, forKey: .sha256),
            size: try c.decodeIfPresent(Int64.self, forKey: .size),
            priority: try c.decodeIfPresent(Int.self, forKey: .priority) ?? 0,
            tags: try c.decodeIfPresent([String].self, forKey: .tags) ?? [],
            allowMetered: try c.decodeIfPresent(Bool.self, forKey: .allowMetered) ?? false,
            allowRoaming: try c.decodeIfPresent(Bool.self, forKey: .allowRoaming),
            segments: try c.decodeIfPresent(Int.self, forKey: .segments),
            maxSize: try c.decodeIfPresent(Int64.self, forKey: .maxSize),
            caFile: try c.decodeIfPresent(String.self, forKey: .caFile),
            certFile: try c.decodeIfPresent(String.self, forKey: .certFile),
            keyFile: try c.decodeIfPresent(String.self, forKey: .keyFile),
            proxy: try c.decodeIfPresent(String.self, forKey: .proxy))
        mode = try c.decodeIfPresent(String.self, forKey: .mode)
        zsync = try c.decodeIfPresent(Bool.self, forKey: .zsync)
        zsyncURL = try c.decodeIfPresent(String.self, forKey: .zsyncURL)
        seeds = try c.decodeIfPresent([String].self, forKey: .seeds)
        mirrors = try c.decodeIfPresent([String].self, forKey: .mirrors)
        metalink = try c.decodeIfPresent(String.self, forKey: .metalink)
        http2 = try c.decodeIfPresent(Bool.self, forKey: .http2)
    }
}

/// A job as clients see it: the record plus live figures.
public struct JobStatus: Sendable, Codable, Hashable {
    public var job: JobRecord
    public var pausedSeconds: Double
    public var link: String?
    public var action: String?
    /// While the server cannot be reached: when the next attempt is due, and why the last one failed.
    public var nextRetryAt: Date?
    public var retryReason: String?
    /// The proxy the job's requests go through (password redacted); nil when direct.
    public var proxy: String?
    /// A rule that would let the job move more but for its spent budget: `cell-allowance: budget cell is
    /// used up`.
    public var heldBy: String?
    /// How the job transfers: `background` or `foreground` (the job's own `mode`, else the policy's, else
    /// background); nil for a finished job.
    public var mode: String?
    /// Background mode's live figures while the transfer runs.
    public var background: BackgroundFigures?

    /// The JSON contract is snake_case (docs/api.md).
    enum CodingKeys: String, CodingKey {
        case job, link, action, mode, background
        case pausedSeconds = "paused_seconds", nextRetryAt = "next_retry_at", retryReason = "retry_reason", proxy =
            "via_proxy"
        case heldBy = "held_by"
    }

    public init(
        job: JobRecord, pausedSeconds: Double, link: String?, action: String?, nextRetryAt: Date? = nil,
        retryReason: String? = nil, proxy: String? = nil
    ) {
        self.job = job
        self.pausedSeconds = pausedSeconds
        self.link = link
        self.action = action
        self.nextRetryAt = nextRetryAt
        self.retryReason = retryReason
        self.proxy = proxy
    }
}

/// Background mode's figures for one running transfer (docs/background.md): the receive window all its
/// connections share, how many connections may have a request out (0 while it steps aside for another
/// flow), the lowest round trip and the queuing delay now (seconds), the target, and the controller's phase.
public struct BackgroundFigures: Sendable, Codable, Hashable {
    public var window: Int
    public var connections: Int
    public var baseDelay: Double?
    public var queuingDelay: Double?
    public var target: Double
    public var phase: String

    enum CodingKeys: String, CodingKey {
        case window, connections, target, phase
        case baseDelay = "base_delay", queuingDelay = "queuing_delay"
    }

    public init(
        window: Int, connections: Int, baseDelay: Double?, queuingDelay: Double?, target: Double, phase: String
    ) {
        self.window = window
        self.connections = connections
        self.baseDelay = baseDelay
        self.queuingDelay = queuingDelay
        self.target = target
        self.phase = phase
    }
}

/// One source of a job with several (docs/mirrors.md).
public struct SourceFigures: Sendable, Codable, Hashable {
    /// The source's URL, its query redacted.
    public var url: String
    /// The file's bytes it delivered that are kept.
    public var bytes: Int64
    /// Why it was dropped; nil while it is used.
    public var dropped: String?
    /// Why it stands by: the policy prefers other sources (`prefer:`), and it takes work only when those are
    /// dropped; nil while it takes work.
    public var standby: String?
    /// The proxy its requests go through, a password shown as `<redacted>`; nil: direct.
    public var proxy: String?

    public init(url: String, bytes: Int64, dropped: String?, standby: String? = nil, proxy: String? = nil) {
        self.url = url
        self.bytes = bytes
        self.dropped = dropped
        self.standby = standby
        self.proxy = proxy
    }
}

/// Any key of a JSON object, to list the keys a request carries.
struct AnyCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) {
        self.stringValue = String(intValue)
        self.intValue = intValue
    }
}
