/// What identifies one version of an object: a strong ETag and/or Last-Modified. A weak ETag
/// (`W/"..."`) is never a validator, so it is not kept.
public struct Validators: Sendable, Equatable, Codable {
    /// The strong ETag, quotes included, e.g. `"5f3a-1b"`.
    public var etag: String?
    /// The Last-Modified header as the server sent it.
    public var lastModified: String?

    enum CodingKeys: String, CodingKey {
        case etag
        case lastModified = "last_modified"
    }

    /// Longest header value kept; longer ones are ignored as hostile.
    static let maxValueLength = 1024

    /// Validators from response headers; a weak or oversized ETag is dropped.
    public init(etag: String?, lastModified: String?) {
        if let etag, !etag.hasPrefix("W/"), etag.utf8.count <= Self.maxValueLength, !etag.isEmpty {
            self.etag = etag
        } else {
            self.etag = nil
        }
        if let lastModified, !lastModified.isEmpty, lastModified.utf8.count <= Self.maxValueLength {
            self.lastModified = lastModified
        } else {
            self.lastModified = nil
        }
    }

    /// No validator at all: a resume cannot prove it continues the same object.
    public var isEmpty: Bool { etag == nil && lastModified == nil }

    /// Whether a response's validators describe the same object as these (the checkpoint's).
    /// Every validator the checkpoint has must be present and equal.
    public func matches(_ response: Validators) -> Bool {
        if let etag, response.etag != etag { return false }
        if let lastModified, response.lastModified != lastModified { return false }
        return true
    }

    /// The precondition headers for a ranged request: `If-Match` on a strong ETag (object stores
    /// honour it, many ignore If-Range); without an ETag, `If-Unmodified-Since` on Last-Modified. Never
    /// `If-Range`: its failure is a 200 with the whole object, which throws the partial away where a 412
    /// says the same thing for free, and Apache ignores a date `If-Range` for a file modified within the
    /// last minute or so (every segment then got 200). The validators of every 206 are checked anyway.
    public var preconditionHeaders: [(String, String)] {
        if let etag { return [("If-Match", etag)] }
        if let lastModified { return [("If-Unmodified-Since", lastModified)] }
        return []
    }
}
