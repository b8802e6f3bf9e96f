/// Where an answer came from: the URL the request was for, where redirects led, and where the object's bytes
/// came from so far.
public struct AnswerPath: Sendable, Equatable {
    /// The request's URL.
    public var requested: String
    /// The URL that answered (the last redirect's target; `requested` when there was none).
    public var answered: String
    /// How many redirects led there.
    public var redirects: Int
    /// Where the object's bytes came from before (the answering URL of the first body, as a `place`);
    /// nil when nothing was received yet.
    public var source: String?

    /// Creates a path.
    public init(requested: String, answered: String, redirects: Int, source: String?) {
        self.requested = requested
        self.answered = answered
        self.redirects = redirects
        self.source = source
    }

    /// A URL as a place: scheme, host and path, without credentials, query or fragment (signatures change,
    /// the object does not; and it is kept in the checkpoint, which keeps no password).
    public static func place(_ url: String) -> String {
        RedactedURL.resumeKey(url)
    }

    /// Whether a redirect led to another place than the one the bytes came from (the request's own place
    /// when nothing came yet).
    public var ledElsewhere: Bool {
        // A checkpoint written before 2026-11-27 kept the source with its credentials.
        redirects > 0 && Self.place(answered) != Self.place(source ?? requested)
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
        /// A whole answer with the object's validators but another length: no origin sends that.
        case lengthContradicts = "an answer whose length contradicts the object's validators"
        /// A precondition failure (412) or an unsatisfiable range (416) from where a redirect led, not from the
        /// server the bytes came from.
        case refusalFromElsewhere = "a refusal from where a redirect led, not from the object's server"
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
        guard let name = lastName(place) else { return false }
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
    ///   known, when neither the URL asked nor the one that answered names a page (`namesPage`) and the page
    ///   answered in place where the URL has an extension, or came through a redirect.
    /// - A 200 to a range request (local data to continue) is when it came through a redirect to another
    ///   place, lacks a validator kind the partial has, is a tiny fraction of the known size, or carries the
    ///   partial's validators with another length. A 200 with the partial's own validators and a length that
    ///   fits is the object, whose server ignores ranges, never an interception.
    /// - A 206, 412 or 416 from another place than the bytes came from is when it lacks the partial's
    ///   validator kinds (206) or at all (412, 416): only the object's own server may say it changed.
    public static func detect(
        _ head: ResponseHead, ask: RangeAsk, known: KnownObject?, hasLocalData: Bool, path: AnswerPath
    ) -> Interception? {
        let away = path.ledElsewhere
        let resuming = hasLocalData || ask.start > 0
        var signs: [Sign] = []
        if head.status == 511 { signs.append(.portalStatus) }
        if head.status == 200 || head.status == 206 || head.status == 511, isHTML(head.contentType) {
            if let knownType = known?.contentType {
                if !isHTML(knownType) { signs.append(.page) }
            } else if !namesPage(path.requested), !namesPage(path.answered),
                away || hasExtension(path.requested) || hasLocalData
            {
                signs.append(.page)
            }
        }
        if let known, !known.validators.isEmpty, resuming {
            let own = known.validators.matches(head.validators)
            let theirs = head.validators
            let lacking =
                (known.validators.etag != nil && theirs.etag == nil)
                || (known.validators.lastModified != nil && theirs.lastModified == nil)
            switch head.status {
            case 200:
                if own {
                    if let total = known.total, let length = head.contentLength, length != total {
                        signs.append(isTiny(length, of: total) ? .tiny : .lengthContradicts)
                    }
                } else {
                    if away { signs.append(.redirectedAway) }
                    if lacking { signs.append(.noValidator) }
                    if let total = known.total, let length = head.contentLength, isTiny(length, of: total) {
                        signs.append(.tiny)
                    }
                }
            case 206:
                if away && lacking { signs.append(.noValidator) }
            case 412, 416:
                if away { signs.append(.refusalFromElsewhere) }
            default:
                break
            }
        }
        guard !signs.isEmpty else { return nil }
        return Interception(
            status: head.status, signs: signs,
            redirectedTo: path.redirects > 0 ? String(RedactedURL.redact(path.answered).prefix(300)) : nil,
            contentType: head.contentType, length: head.contentLength)
    }

    /// The last path segment of a URL (scheme and authority aside), path parameters (`;jsessionid=…`) left
    /// out; nil when the path is empty.
    static func lastName(_ url: String) -> String? {
        let place = AnswerPath.place(url)
        guard let scheme = place.range(of: "://") else { return nil }
        let rest = place[scheme.upperBound...]
        guard let slash = rest.firstIndex(of: "/") else { return nil }
        guard let name = rest[slash...].split(separator: "/").last else { return nil }
        return String(name.prefix { $0 != ";" })
    }

    /// Whether the URL's last path segment has an extension: a dot followed by something with a letter
    /// (`f.bin`, `x.tar.gz`; not `v1.2`).
    static func hasExtension(_ url: String) -> Bool {
        guard let name = lastName(url), let dot = name.lastIndex(of: "."), dot != name.startIndex else { return false }
        return name[name.index(after: dot)...].contains { $0.isLetter }
    }

    /// The sentence `get` prints and a daemon job waits with.
    public var reason: String {
        let whereFrom = redirectedTo.map { "redirected to \($0)" } ?? "answered in place"
        return "a captive portal or proxy answered instead of the server (\(whereFrom))"
    }

    /// The whole message: what came, what was kept, what to do.
    public var message: String { message(partial: true) }

    /// The message for a download that had a partial (`partial`) or none yet.
    public func message(partial: Bool) -> String {
        var what = "HTTP \(status)"
        if let contentType { what += " \(contentType.split(separator: ";").first ?? "")" }
        if let length { what += ", \(length) bytes" }
        let signsText = signs.map(\.rawValue).joined(separator: "; ")
        return
            "\(reason.prefix(1).uppercased())\(reason.dropFirst()): \(what); \(signsText). Nothing of it was written\(partial ? "; the partial file and its checkpoint are kept as they were" : ", and no file was created"). Sign in to the network (open any http:// page in a browser), then run the same command again\(partial ? " to resume" : "")."
    }
}
