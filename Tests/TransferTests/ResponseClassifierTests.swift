import Testing

@testable import Transfer

struct ResponseClassifierTests {
    static let etag = "\"abc\""
    static let known = KnownObject(
        validators: Validators(etag: etag, lastModified: "Sat, 01 Jan 2022 00:00:01 GMT"), total: 1000)

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var head: ResponseHead
        var ask: RangeAsk
        var known: KnownObject?
        var hasLocalData: Bool
        var hasAllData = false
        var expected: ResponseDecision
        var testDescription: String { name }
    }

    static let validators = Validators(etag: etag, lastModified: "Sat, 01 Jan 2022 00:00:01 GMT")
    static let lm = "Sat, 01 Jan 2022 00:00:01 GMT"

    static let rows: [Row] = [
        Row(
            name: "206 at the asked offset is written there",
            head: ResponseHead(status: 206, etag: etag, lastModified: lm, contentRange: "bytes 500-999/1000"),
            ask: RangeAsk(start: 500), known: known, hasLocalData: true,
            expected: .body(offset: 500, length: 500, total: 1000, validators: validators)
        ),
        Row(
            name: "206 starting earlier than asked restarts",
            head: ResponseHead(status: 206, etag: etag, lastModified: lm, contentRange: "bytes 400-999/1000"),
            ask: RangeAsk(start: 500), known: known, hasLocalData: true, expected: .restart(.rangeMismatch)
        ),
        Row(
            name: "206 longer than a bounded ask restarts",
            head: ResponseHead(status: 206, etag: etag, lastModified: lm, contentRange: "bytes 500-999/1000"),
            ask: RangeAsk(start: 500, last: 599), known: known, hasLocalData: true, expected: .restart(.rangeMismatch)
        ),
        Row(
            name: "206 with another total restarts",
            head: ResponseHead(status: 206, etag: etag, lastModified: lm, contentRange: "bytes 500-1099/1100"),
            ask: RangeAsk(start: 500), known: known, hasLocalData: true, expected: .restart(.objectChanged)
        ),
        Row(
            name: "206 with a new ETag restarts (If-Match ignored)",
            head: ResponseHead(status: 206, etag: "\"new\"", lastModified: lm, contentRange: "bytes 500-999/1000"),
            ask: RangeAsk(start: 500), known: known, hasLocalData: true, expected: .restart(.objectChanged)
        ),
        Row(
            name: "206 with a new Last-Modified restarts",
            head: ResponseHead(
                status: 206, etag: etag, lastModified: "Sun, 02 Jan 2022 00:00:00 GMT",
                contentRange: "bytes 500-999/1000"),
            ask: RangeAsk(start: 500), known: known, hasLocalData: true, expected: .restart(.objectChanged)
        ),
        Row(
            name: "206 without validators when the checkpoint has them restarts",
            head: ResponseHead(status: 206, contentRange: "bytes 500-999/1000"),
            ask: RangeAsk(start: 500), known: known, hasLocalData: true, expected: .restart(.objectChanged)
        ),
        Row(
            name: "206 with an unparsable Content-Range restarts",
            head: ResponseHead(status: 206, etag: etag, contentRange: "bytes 500-"),
            ask: RangeAsk(start: 500), known: known, hasLocalData: true, expected: .restart(.rangeMismatch)
        ),
        Row(
            name: "first 206 of a fresh download adopts the validators",
            head: ResponseHead(status: 206, etag: etag, lastModified: lm, contentRange: "bytes 0-999/1000"),
            ask: RangeAsk(start: 0), known: nil, hasLocalData: false,
            expected: .body(offset: 0, length: 1000, total: 1000, validators: validators)
        ),
        Row(
            name: "200 to a fresh request is the whole object",
            head: ResponseHead(status: 200, etag: "W/\"weak\"", contentLength: 1000),
            ask: RangeAsk(start: 0), known: nil, hasLocalData: false,
            expected: .body(offset: 0, length: 1000, total: 1000, validators: Validators(etag: nil, lastModified: nil))
        ),
        Row(
            name: "200 while resuming restarts",
            head: ResponseHead(status: 200, etag: etag, lastModified: lm, contentLength: 1000),
            ask: RangeAsk(start: 500), known: known, hasLocalData: true, expected: .restart(.rangeIgnored)
        ),
        Row(
            name: "412 restarts",
            head: ResponseHead(status: 412), ask: RangeAsk(start: 500), known: known, hasLocalData: true,
            expected: .restart(.preconditionFailed)
        ),
        Row(
            name: "416 with all data finishes",
            head: ResponseHead(status: 416, contentRange: "bytes */1000"), ask: RangeAsk(start: 1000), known: known,
            hasLocalData: true, hasAllData: true, expected: .complete
        ),
        Row(
            name: "416 without all data restarts",
            head: ResponseHead(status: 416, contentRange: "bytes */1000"), ask: RangeAsk(start: 500), known: known,
            hasLocalData: true, expected: .restart(.rangeNotSatisfiable)
        ),
        Row(
            name: "503 with Retry-After retries after it",
            head: ResponseHead(status: 503, retryAfter: "7"), ask: RangeAsk(start: 500), known: known,
            hasLocalData: true,
            expected: .retry(after: .seconds(7), reason: "HTTP 503")
        ),
        Row(
            name: "429 retries",
            head: ResponseHead(status: 429), ask: RangeAsk(start: 0), known: nil, hasLocalData: false,
            expected: .retry(after: nil, reason: "HTTP 429")
        ),
        Row(
            name: "307 follows the Location",
            head: ResponseHead(status: 307, location: "/other"), ask: RangeAsk(start: 0), known: nil,
            hasLocalData: false,
            expected: .redirect(location: "/other")
        ),
    ]

    @Test(arguments: rows)
    func classifies(_ row: Row) {
        let decision = ResponseClassifier.classify(
            row.head, ask: row.ask, known: row.known, hasLocalData: row.hasLocalData, hasAllData: row.hasAllData
        )
        #expect(decision == row.expected)
    }

    @Test(arguments: [404, 403, 401, 410])
    func clientErrorsFail(_ status: Int) {
        let decision = ResponseClassifier.classify(
            ResponseHead(status: status), ask: RangeAsk(start: 0), known: nil, hasLocalData: false
        )
        guard case .fail(let error) = decision else {
            Issue.record("expected a failure, got \(decision)")
            return
        }
        #expect(error.code == .httpStatus)
        #expect(error.message.contains("\(status)"))
    }
}

extension ResponseDecision: CustomTestStringConvertible {
    public var testDescription: String { "\(self)" }
}
