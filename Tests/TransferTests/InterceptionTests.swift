import Testing

@testable import Transfer

/// Which answers are a portal's or a proxy's and which are the object's (docs/get.md, "Interception"): the
/// classifier's table, pure.
struct InterceptionTests {
    static let etag = "\"abc\""
    static let date = "Tue, 24 Nov 2026 10:00:00 GMT"
    static let total: Int64 = 32 << 20
    static let url = "http://files.example/f.bin"
    static let known = KnownObject(
        validators: Validators(etag: etag, lastModified: date), total: total,
        contentType: "application/octet-stream", source: url)
    static let resume = RangeAsk(start: 22 << 20)

    static func path(to answered: String = url, redirects: Int = 0) -> AnswerPath {
        AnswerPath(requested: url, answered: answered, redirects: redirects, source: known.source)
    }

    static func page(status: Int = 200) -> ResponseHead {
        ResponseHead(status: status, contentLength: 46, contentType: "text/html; charset=utf-8")
    }

    func classify(
        _ head: ResponseHead, ask: RangeAsk = resume, known: KnownObject? = known, local: Bool = true,
        path: AnswerPath = path()
    ) -> ResponseDecision {
        ResponseClassifier.classify(head, ask: ask, known: known, hasLocalData: local, path: path)
    }

    func signs(_ decision: ResponseDecision) -> [Interception.Sign]? {
        if case .intercepted(let i) = decision { return i.signs }
        return nil
    }

    @Test func theHotelsRedirectedPageIsAnInterceptionWithEverySign() {
        let decision = classify(Self.page(), path: Self.path(to: "http://files.example/login", redirects: 1))
        #expect(signs(decision) == [.page, .redirectedAway, .noValidator, .tiny])
        guard case .intercepted(let i) = decision else { return }
        #expect(
            i.reason
                == "a captive portal or proxy answered instead of the server (redirected to http://files.example/login)"
        )
        #expect(i.message.contains("HTTP 200 text/html, 46 bytes"))
        #expect(i.message.contains("partial file and its checkpoint are kept"))
    }

    @Test func eachSignAloneIsEnough() {
        // A 200 from elsewhere, the object's type and a plausible length, but another ETag.
        let elsewhere = ResponseHead(
            status: 200, etag: "\"other\"", lastModified: Self.date, contentLength: Self.total,
            contentType: "application/octet-stream")
        #expect(
            signs(classify(elsewhere, path: Self.path(to: "http://cache.example/f.bin", redirects: 1)))
                == [.redirectedAway])
        // No validator at all, from the same place.
        let bare = ResponseHead(status: 200, contentLength: Self.total, contentType: "application/octet-stream")
        #expect(signs(classify(bare)) == [.noValidator])
        // A tiny answer with its own validators of the same kinds.
        let tiny = ResponseHead(
            status: 200, etag: "\"x\"", lastModified: "Wed, 25 Nov 2026 10:00:00 GMT", contentLength: 1000,
            contentType: "application/octet-stream")
        #expect(signs(classify(tiny)) == [.tiny])
        // An HTML page with validators, full length, in place.
        let html = ResponseHead(
            status: 200, etag: "\"x\"", lastModified: Self.date, contentLength: Self.total, contentType: "text/html")
        #expect(signs(classify(html)) == [.page])
        // 511 whatever else.
        #expect(signs(classify(ResponseHead(status: 511, contentLength: 0), local: false)) == [.portalStatus])
    }

    @Test func theOriginSayingTheObjectChangedStillRestarts() {
        // 412 to If-Match.
        #expect(classify(ResponseHead(status: 412)) == .restart(.preconditionFailed))
        // A 200 from the same place with another strong ETag, the object's type, a plausible size.
        let changed = ResponseHead(
            status: 200, etag: "\"v2\"", lastModified: "Wed, 25 Nov 2026 10:00:00 GMT", contentLength: 30 << 20,
            contentType: "application/octet-stream")
        #expect(classify(changed) == .restart(.objectChanged))
        // The same through the same redirect the bytes came through before.
        let viaCDN = KnownObject(
            validators: Self.known.validators, total: Self.total, contentType: "application/octet-stream",
            source: "http://cdn.example/f.bin")
        #expect(
            classify(
                changed, known: viaCDN,
                path: AnswerPath(
                    requested: Self.url, answered: "http://cdn.example/f.bin?sig=2", redirects: 1,
                    source: viaCDN.source)) == .restart(.objectChanged))
        // A 206 from elsewhere with another ETag is still the origin's word (a portal never answers 206).
        let moved = ResponseHead(
            status: 206, etag: "\"v2\"", lastModified: Self.date,
            contentRange: "bytes \(22 << 20)-\(Self.total - 1)/\(Self.total)",
            contentType: "application/octet-stream")
        #expect(
            classify(moved, path: Self.path(to: "http://mirror.example/f.bin", redirects: 1))
                == .restart(.objectChanged))
    }

    @Test func aWholeAnswerWithThePartialsOwnValidatorsIsTheObject() {
        let same = ResponseHead(
            status: 200, etag: Self.etag, lastModified: Self.date, contentLength: Self.total,
            contentType: "application/octet-stream")
        #expect(
            classify(same, path: Self.path(to: "http://mirror.example/f.bin", redirects: 1))
                == .restart(.rangeIgnored))
    }

    @Test func aFirstDownloadTellsAPageFromAFile() {
        func fresh(_ url: String, answered: String? = nil) -> ResponseDecision {
            ResponseClassifier.classify(
                Self.page(), ask: RangeAsk(start: 0), known: nil, hasLocalData: false,
                path: AnswerPath(
                    requested: url, answered: answered ?? url, redirects: answered == nil ? 0 : 1, source: nil))
        }
        // A file's name answered with a page, in place or through a redirect.
        #expect(signs(fresh("http://h/f.bin")) == [.page])
        #expect(signs(fresh("http://h/download/latest", answered: "http://portal/login")) == [.page])
        // A page asked for is a page.
        for url in ["http://h/", "http://h", "http://h/index.html", "http://h/a/b.php?x=1", "http://h/docs/"] {
            #expect(signs(fresh(url)) == nil, "\(url)")
        }
        #expect(signs(fresh("http://h/", answered: "http://h/index.html")) == nil)
        // A name without an extension answered in place: it may be the page it names.
        #expect(signs(fresh("http://h/download/latest")) == nil)
        // A download that is not HTML is never intercepted on a first request.
        let file = ResponseHead(status: 200, contentLength: 10, contentType: "application/octet-stream")
        #expect(
            ResponseClassifier.classify(
                file, ask: RangeAsk(start: 0), known: nil, hasLocalData: false,
                path: AnswerPath(requested: "http://h/f.bin", answered: "http://cdn/x", redirects: 1, source: nil))
                == .body(offset: 0, length: 10, total: 10, validators: Validators(etag: nil, lastModified: nil)))
    }

    /// What the attack on the release binary found: a page or a tiny answer wearing the object's own
    /// validators, a 412 or 416 from where a redirect led, a validator-less 206 from there; and a directory's
    /// redirect to its `/` page on a first download is not a portal.
    @Test func disguisesAreSeenThrough() {
        let fakePage = ResponseHead(
            status: 200, etag: Self.etag, lastModified: Self.date, contentLength: 18, contentType: "text/html")
        #expect(signs(classify(fakePage)) == [.page, .tiny])
        let fakeTiny = ResponseHead(
            status: 200, etag: Self.etag, lastModified: Self.date, contentLength: 100,
            contentType: "application/octet-stream")
        #expect(signs(classify(fakeTiny)) == [.tiny])
        let wrongLength = ResponseHead(
            status: 200, etag: Self.etag, lastModified: Self.date, contentLength: Self.total / 2,
            contentType: "application/octet-stream")
        #expect(signs(classify(wrongLength)) == [.lengthContradicts])
        let elsewhere = Self.path(to: "http://portal.example/x", redirects: 1)
        #expect(
            signs(classify(ResponseHead(status: 412, contentType: "text/html"), path: elsewhere)) == [
                .refusalFromElsewhere
            ])
        #expect(
            signs(classify(ResponseHead(status: 416, contentRange: "bytes */18"), path: elsewhere))
                == [.refusalFromElsewhere])
        let junk = ResponseHead(
            status: 206, contentRange: "bytes \(22 << 20)-\(Self.total - 1)/\(Self.total)",
            contentType: "application/octet-stream")
        #expect(signs(classify(junk, path: elsewhere)) == [.noValidator])
        // In place, the same answers keep their old meaning.
        #expect(classify(ResponseHead(status: 412, contentType: "text/html")) == .restart(.preconditionFailed))
        #expect(classify(junk) == .restart(.objectChanged))
        // A directory's redirect to its page, on a first download.
        let docs = ResponseClassifier.classify(
            Self.page(status: 200), ask: RangeAsk(start: 0), known: nil, hasLocalData: false,
            path: AnswerPath(requested: "http://h/docs", answered: "http://h/docs/", redirects: 1, source: nil))
        #expect(signs(docs) == nil)
        #expect(Interception.namesPage("http://h/x.html;jsessionid=1"))
        #expect(!Interception.hasExtension("http://h/v1.2") && Interception.hasExtension("http://h/a.tar.gz"))
        guard case .intercepted(let i) = classify(fakePage) else { return }
        #expect(i.message(partial: false).contains("no file was created"))
        #expect(!i.message(partial: false).contains("partial"))
    }

    @Test func pathsAndNames() {
        #expect(AnswerPath.place("http://h/a/b?sig=1#x") == "http://h/a/b")
        #expect(Interception.namesPage("http://h:8080/a/") && !Interception.namesPage("http://h/a.iso"))
        #expect(Interception.isHTML("Text/HTML; charset=utf-8") && !Interception.isHTML("text/plain"))
        #expect(Interception.isTiny(46, of: 32 << 20) && !Interception.isTiny(1 << 20, of: 32 << 20))
    }
}
