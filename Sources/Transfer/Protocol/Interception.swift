/// Where an answer came from: the URL the request was for, where redirects led, and where the object's bytes
/// came from so far.
public struct AnswerPath: Sendable, Equatable {
    /// The request's URL.
    public var requested: String
    /// The URL that answered (the last redirect's target; `requested` when there was none).
    public var answered: String
    /// How many redirects led there.
    public var redirects: Int
    /// Where the object's bytes came from before (the answering URL of the first body, query left out);
    /// nil when nothing was received yet.
    public var source: String?

    /// Creates a path.
    public init(requested: String, answered: String, redirects: Int, source: String?) {
        self.requested = requested
        self.answered = answered
        self.redirects = redirects
        self.source = source
    }

    /// A URL as a place: scheme, authority and path, without query or fragment (signatures change, the
    /// object does not).
    public static func place(_ url: String) -> String {
        var end = url.endIndex
        if let mark = url.firstIndex(where: { $0 == "?" || $0 == "#" }) { end = mark }
        return String(url[..<end])
    }

    /// Whether a redirect led to another place than the one the bytes came from (the request's own place
    /// when nothing came yet).
    public var ledElsewhere: Bool {
        redirects > 0 && Self.place(answered) != (source ?? Self.place(requested))
    }
}

/// An answer that is not the object but a captive portal's or an intercepting proxy's: the partial stays as it
/// is and no byte of the answer is written (docs/get.md, "Interception"). Pure.
public struct Interception: Sendable, Equatable, Error {
    /// What gave the answer away.
    public enum Sign: String, Sendable, Equatable {
        /// 511 Network Authentication Required (RFC 6585): a portal says so itself.
        case portalStatus = "511 Network Authentication Required"
        /// An HTML page where the object is not one.
        case page = "an HTML page where the object is not one"
        /// A 200 to a range request that came through a redirect to another place.
        case redirectedAway = "a whole answer to a range request, from where a redirect led"
        /// A 200 to a range request without the validator the partial was fetched under.
        case noValidator = "an answer without the object's validator"
        /// A 200 to a range request whose length is a tiny fraction of the object's.
        case tiny = "an answer a tiny fraction of the object's size"
    }

    /// The status of the answer.
    public var status: Int
    /// What gave it away, the strongest sign first.
    public var signs: [Sign]
    /// Where the answer came from when a redirect led there (redacted); nil when it answered in place.
    public var redirectedTo: String?
    /// Its Content-Type, as sent (bounded).
    public var contentType: String?
    /// Its length, when sent.
    public var length: Int64?

    /// Creates an interception.
    public init(status: Int, signs: [Sign], redirectedTo: String?, contentType: String?, length: Int64?) {
        self.status = status
        self.signs = signs
        self.redirectedTo = redirectedTo
        self.contentType = contentType.map { String($0.prefix(80)) }
        self.length = length
    }

    /// A length below which a whole answer to a range request is a tiny fraction of the object: under 1 %.
    static func isTiny(_ length: Int64, of total: Int64) -> Bool { length < total / 100 }

    /// File name extensions of pages: a URL ending in one may well answer with HTML.
    static let pageExtensions: Set<String> = [
        "htm", "html", "xhtml", "shtml", "php", "asp", "aspx", "jsp", "cgi", "pl",
    ]

    /// Whether `url` names a page rather than a file: its path ends in `/`, is empty, or has a page's
    /// extension. A last segment without an extension is a file (`/download/latest`).
    static func namesPage(_ url: String) -> Bool {
        let place = AnswerPath.place(url)
        guard let scheme = place.range(of: "://") else { return true }
        let rest = place[scheme.upperBound...]
        guard let slash = rest.firstIndex(of: "/") else { return true }
        let path = rest[slash...]
        if path.hasSuffix("/") { return true }
        let name = path.split(separator: "/").last.map(String.init) ?? ""
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return false }
        return pageExtensions.contains(name[name.index(after: dot)...].lowercased())
    }

    /// Whether a Content-Type is HTML.
    static func isHTML(_ contentType: String?) -> Bool {
        guard let type = contentType?.split(separator: ";").first else { return false }
        let media = type.trimmingCharacters(" ").lowercased()
        return media == "text/html" || media == "application/xhtml+xml"
    }

    /// The interception this answer is, or nil when it may be the object.
    ///
    /// - A 511 always is.
    /// - A 200 or 206 with an HTML page is when the object is known not to be HTML, or, before anything is
    ///   known, when the URL names a file (`namesPage`) and the page answered in place with an extension
    ///   there or came through a redirect.
    /// - A 200 to a range request (local data to continue) that does not carry the partial's validators is
    ///   when it came through a redirect to another place, lacks a validator kind the partial has, or is a
    ///   tiny fraction of the known size. A 200 with the partial's own validators is the object, whose server
    ///   ignores ranges, never an interception.
    public static func detect(
        _ head: ResponseHead, ask: RangeAsk, known: KnownObject?, hasLocalData: Bool, path: AnswerPath
    ) -> Interception? {
        let away = path.ledElsewhere
        var signs: [Sign] = []
        if head.status == 511 { signs.append(.portalStatus) }
        if head.status == 200 || head.status == 206 || head.status == 511, isHTML(head.contentType) {
            if let knownType = known?.contentType {
                if !isHTML(knownType) { signs.append(.page) }
            } else if !namesPage(path.requested), away || hasExtension(path.requested) || hasLocalData {
                signs.append(.page)
            }
        }
        if head.status == 200, hasLocalData || ask.start > 0, let known, !known.validators.isEmpty,
            !known.validators.matches(head.validators)
        {
            if path.ledElsewhere { signs.append(.redirectedAway) }
            let theirs = head.validators
            if (known.validators.etag != nil && theirs.etag == nil)
                || (known.validators.lastModified != nil && theirs.lastModified == nil)
            {
                signs.append(.noValidator)
            }
            if let total = known.total, let length = head.contentLength, isTiny(length, of: total) {
                signs.append(.tiny)
            }
        }
        guard !signs.isEmpty else { return nil }
        return Interception(
            status: head.status, signs: signs,
            redirectedTo: path.redirects > 0 ? RedactedURL.redact(path.answered) : nil,
            contentType: head.contentType, length: head.contentLength)
    }

    /// Whether the URL's last path segment has an extension.
    static func hasExtension(_ url: String) -> Bool {
        let place = AnswerPath.place(url)
        guard let name = place.split(separator: "/").last, place.split(separator: "/").count > 2 else { return false }
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return false }
        return name.index(after: dot) != name.endIndex
    }

    /// The sentence `get` prints and a daemon job waits with.
    public var reason: String {
        let whereFrom = redirectedTo.map { "redirected to \($0)" } ?? "answered in place"
        return "a captive portal or proxy answered instead of the server (\(whereFrom))"
    }

    /// The whole message: what came, what was kept, what to do.
    public var message: String {
        var what = "HTTP \(status)"
        if let contentType { what += " \(contentType.split(separator: ";").first ?? "")" }
        if let length { what += ", \(length) bytes" }
        let signsText = signs.map(\.rawValue).joined(separator: "; ")
        return
            "\(reason.prefix(1).uppercased())\(reason.dropFirst()): \(what); \(signsText). Nothing of it was written; the partial file and its checkpoint are kept as they were. Sign in to the network (open any http:// page in a browser), then run the same command again to resume."
    }
}
