/// The parts of a response head the downloader decides on.
public struct ResponseHead: Sendable, Equatable {
    /// The status code.
    public var status: Int
    /// The ETag header, as sent.
    public var etag: String?
    /// The Last-Modified header.
    public var lastModified: String?
    /// The Content-Range header.
    public var contentRange: String?
    /// The Content-Length header.
    public var contentLength: Int64?
    /// The Retry-After header.
    public var retryAfter: String?
    /// The Location header.
    public var location: String?
    /// The Content-Encoding header.
    public var contentEncoding: String?
    /// The Content-Type header.
    public var contentType: String?

    /// Creates a head.
    public init(
        status: Int, etag: String? = nil, lastModified: String? = nil, contentRange: String? = nil,
        contentLength: Int64? = nil, retryAfter: String? = nil, location: String? = nil, contentEncoding: String? = nil,
        contentType: String? = nil
    ) {
        self.status = status
        self.etag = etag
        self.lastModified = lastModified
        self.contentRange = contentRange
        self.contentLength = contentLength
        self.retryAfter = retryAfter
        self.location = location
        self.contentEncoding = contentEncoding
        self.contentType = contentType
    }

    /// The validators this response carries (weak ETags dropped).
    public var validators: Validators { Validators(etag: etag, lastModified: lastModified) }
}

/// The request a response answers: where it starts, where it ends (inclusive) if bounded, and
/// whether it carried a Range header at all.
public struct RangeAsk: Sendable, Equatable {
    /// The first byte asked for.
    public var start: Int64
    /// The last byte asked for (inclusive); nil for `bytes=start-`.
    public var last: Int64?
    /// Whether a Range header was sent (false: a plain GET after a restart).
    public var ranged: Bool

    /// Creates an ask.
    public init(start: Int64, last: Int64? = nil, ranged: Bool = true) {
        self.start = start
        self.last = last
        self.ranged = ranged
    }

    /// `bytes=start-` or `bytes=start-last`.
    public var rangeHeader: String? {
        guard ranged else { return nil }
        if let last { return "bytes=\(start)-\(last)" }
        return "bytes=\(start)-"
    }
}

/// What the downloader knows about the object before this response.
public struct KnownObject: Sendable, Equatable {
    /// The validators of the object being downloaded.
    public var validators: Validators
    /// Its length, when known.
    public var total: Int64?
    /// Its Content-Type, when the server said one.
    public var contentType: String?
    /// Where its bytes came from: the URL that answered the first body, query left out (`AnswerPath.place`).
    public var source: String?

    /// Creates the knowledge.
    public init(validators: Validators, total: Int64?, contentType: String? = nil, source: String? = nil) {
        self.validators = validators
        self.total = total
        self.contentType = contentType
        self.source = source
    }
}

/// Why the partial data is thrown away and the download starts from 0.
public enum RestartReason: String, Sendable, Equatable {
    case objectChanged = "the object changed on the server (validator or length differs)"
    case preconditionFailed = "the server answered 412: the object changed since the download began"
    case rangeIgnored = "the server answered 200 to a range request (ranges unsupported, or the object changed)"
    case rangeMismatch = "the server's Content-Range is not the range that was asked for"
    case rangeNotSatisfiable = "the server answered 416 and the local data is not complete"
    case unvalidated =
        "the server gives no validator (strong ETag or Last-Modified), so the partial data cannot be proven to belong to the same object; pass --resume-unvalidated to keep it"
    case damagedCheckpoint = "the checkpoint is unreadable or does not match this download"
    case otherURL = "the checkpoint was written for another URL"
}

/// What to do with a response: the action the I/O side carries out.
public enum ResponseDecision: Sendable, Equatable {
    /// Write the body at `offset`; `length` bytes are expected (nil: until the end of the body).
    case body(offset: Int64, length: Int64?, total: Int64?, validators: Validators)
    /// Discard everything and start again from 0 without a Range header.
    case restart(RestartReason)
    /// 416 and the local data already covers the object: verify and finish.
    case complete
    /// A transient failure: retry the same range after at least `after` (Retry-After), if given.
    case retry(after: Duration?, reason: String)
    /// Follow a redirect to `location`.
    case redirect(location: String)
    /// A failure retrying cannot fix.
    case fail(TransferError)
    /// Not the object but a captive portal's or a proxy's answer: write nothing, keep the partial.
    case intercepted(Interception)
}

/// Classifies a response head against the request and the checkpoint: the resume protocol as a pure
/// function (the table in docs/checkpoint.md).
public enum ResponseClassifier {
    /// Nil when every size in the head is one Meterwise can do arithmetic on (at most
    /// `ObjectLimits.maxBytes`); otherwise the failure that says so.
    static func sizeProblem(_ head: ResponseHead) -> TransferError? {
        let limit = ObjectLimits.maxBytes
        if let length = head.contentLength, length > limit {
            return ObjectLimits.tooLarge("Content-Length \(length)")
        }
        if let text = head.contentRange {
            if let range = ContentRange(header: text), range.last < limit, (range.total ?? 0) <= limit { return nil }
            if let total = ContentRange.unsatisfiedTotal(header: text), total > limit {
                return ObjectLimits.tooLarge("Content-Range \(text.prefix(60))")
            }
            if let range = ContentRange(header: text), range.last >= limit || (range.total ?? 0) > limit {
                return ObjectLimits.tooLarge("Content-Range \(text.prefix(60))")
            }
        }
        return nil
    }

    /// - Parameters:
    ///   - head: the response head.
    ///   - ask: the range that was requested.
    ///   - known: what the checkpoint (or the first response) says about the object; nil before the
    ///     first response of a fresh download.
    ///   - hasLocalData: whether the partial file holds data this response would continue.
    ///   - hasAllData: whether the local data already covers the whole object.
    ///   - path: where the answer came from (redirects), for telling a portal's answer from the object's;
    ///     nil: the request's URL answered.
    public static func classify(
        _ head: ResponseHead, ask: RangeAsk, known: KnownObject?, hasLocalData: Bool, hasAllData: Bool = false,
        path: AnswerPath? = nil
    ) -> ResponseDecision {
        if let problem = sizeProblem(head) { return .fail(problem) }
        let answerPath = path ?? AnswerPath(requested: "", answered: "", redirects: 0, source: known?.source)
        if let interception = Interception.detect(
            head, ask: ask, known: known, hasLocalData: hasLocalData, path: answerPath)
        {
            return .intercepted(interception)
        }
        if (200...206).contains(head.status), let encoding = head.contentEncoding,
            !encoding.split(separator: ",").allSatisfy({ $0.trimmingCharacters(" ").lowercased() == "identity" })
        {
            // Asked for identity: an encoded body must never be spliced raw into the file.
            return .fail(
                TransferError(
                    .protocolViolation,
                    "The server sent the body with Content-Encoding \(encoding.prefix(40)) although identity was asked for; the file would be corrupt. Ask the server's operator to serve it unencoded."
                ))
        }
        switch head.status {
        case 301, 302, 303, 307, 308:
            guard let location = head.location, !location.isEmpty else {
                return .fail(
                    TransferError(.protocolViolation, "The server redirected without a Location header; check the URL.")
                )
            }
            return .redirect(location: location)
        case 206:
            guard let text = head.contentRange, let range = ContentRange(header: text) else {
                return .restart(.rangeMismatch)
            }
            guard ask.ranged, range.first == ask.start else { return .restart(.rangeMismatch) }
            if let last = ask.last, range.last > last { return .restart(.rangeMismatch) }
            if let known {
                if let total = known.total, range.total != total { return .restart(.objectChanged) }
                if !known.validators.matches(head.validators) { return .restart(.objectChanged) }
            }
            return .body(offset: range.first, length: range.length, total: range.total, validators: head.validators)
        case 200:
            if hasLocalData || ask.start != 0 {
                // Not a portal (`Interception`): another validator from the same place is the object changed.
                if let known, !known.validators.isEmpty, !known.validators.matches(head.validators) {
                    return .restart(.objectChanged)
                }
                return .restart(.rangeIgnored)
            }
            if let known, !known.validators.isEmpty, !known.validators.matches(head.validators) {
                return .restart(.objectChanged)
            }
            return .body(offset: 0, length: head.contentLength, total: head.contentLength, validators: head.validators)
        case 412:
            return .restart(.preconditionFailed)
        case 416:
            return hasAllData ? .complete : .restart(.rangeNotSatisfiable)
        case 408, 429, 500...599:
            return .retry(after: head.retryAfter.flatMap(RetryPolicy.parseRetryAfter), reason: "HTTP \(head.status)")
        default:
            return .fail(
                TransferError(
                    .httpStatus,
                    "The server answered HTTP \(head.status); check the URL and your access to it (a presigned URL may have expired)."
                )
            )
        }
    }
}
