import Foundation
import Testing

@testable import Transfer

struct ContentRangeTests {
    @Test(
        arguments: [
            ("bytes 0-99/100", ContentRange(first: 0, last: 99, total: 100)),
            ("bytes 5-9/*", ContentRange(first: 5, last: 9, total: nil)),
            ("bytes 10-9/100", nil),
            ("bytes 0-100/100", nil),
            ("items 0-1/2", nil),
            ("bytes -5/100", nil),
        ] as [(String, ContentRange?)])
    func parses(_ text: String, _ expected: ContentRange?) {
        #expect(ContentRange(header: text) == expected)
    }
}

struct ValidatorsTests {
    @Test(
        arguments: [
            ("\"x\"", nil, [("If-Match", "\"x\"")]),
            (
                "W/\"x\"", "Sat, 01 Jan 2022 00:00:00 GMT",
                // Never If-Range: Apache ignores a recent date in it and answers 200 (issue 30, case 4).
                [("If-Unmodified-Since", "Sat, 01 Jan 2022 00:00:00 GMT")]
            ),
            ("W/\"x\"", nil, []),
            (nil, nil, []),
        ] as [(String?, String?, [(String, String)])])
    func preconditions(_ etag: String?, _ lastModified: String?, _ expected: [(String, String)]) {
        let headers = Validators(etag: etag, lastModified: lastModified).preconditionHeaders
        #expect(headers.map(\.0) == expected.map(\.0))
        #expect(headers.map(\.1) == expected.map(\.1))
    }

    @Test func weakETagIsNeverAValidator() {
        #expect(Validators(etag: "W/\"x\"", lastModified: nil).isEmpty)
    }
}

struct RetryPolicyTests {
    @Test(
        arguments: [
            (1, nil, 0.0, Duration.milliseconds(125)),
            (1, nil, 0.999_999_9, Duration.milliseconds(250)),
            (3, nil, 0.0, Duration.milliseconds(500)),
            (2, Duration.seconds(3), 0.0, Duration.seconds(3)),
            (8, nil, 0.0, Duration.seconds(15)),
            (2, Duration.seconds(3600), 0.0, Duration.seconds(300)),
        ] as [(Int, Duration?, Double, Duration)])
    func backsOff(_ attempt: Int, _ retryAfter: Duration?, _ jitter: Double, _ expected: Duration) {
        let delay = RetryPolicy().delay(attempt: attempt, retryAfter: retryAfter, jitter: jitter)!
        #expect(abs((delay - expected).secondsDouble) < 0.001)
    }

    @Test func givesUpAfterMaxAttempts() {
        #expect(RetryPolicy(maxAttempts: 3).delay(attempt: 4, retryAfter: nil, jitter: 0) == nil)
        #expect(RetryPolicy(maxAttempts: 0).delay(attempt: 1, retryAfter: nil, jitter: 0) == nil)
    }

    @Test(arguments: [("5", Duration.seconds(5)), ("0", .zero), ("Wed, 21 Oct 2015 07:28:00 GMT", .seconds(5))])
    func parsesRetryAfter(_ text: String, _ expected: Duration) {
        #expect(RetryPolicy.parseRetryAfter(text) == expected)
    }
}

struct TokenBucketTests {
    @Test(
        arguments: [
            (Int64(1000), [(0.0, 100), (0.0, 100)], Duration.milliseconds(200)),
            (1000, [(0.0, 100), (1.0, 100)], .zero),
            (1000, [(0.0, 1000)], .seconds(1)),
        ] as [(Int64?, [(Double, Int)], Duration)])
    func waits(_ rate: Int64?, _ takes: [(Double, Int)], _ lastWait: Duration) {
        var bucket = TokenBucket(rate: rate, now: 0)
        var wait = Duration.zero
        for (now, bytes) in takes { wait = bucket.take(bytes, now: now) }
        #expect(abs((wait - lastWait).secondsDouble) < 0.001)
    }

    @Test func unlimitedNeverWaits() {
        var bucket = TokenBucket(rate: nil, now: 0)
        #expect(bucket.take(1 << 30, now: 0) == .zero)
        bucket.setRate(10, now: 0)
        #expect(bucket.take(10, now: 0) == .seconds(1))
        bucket.setRate(nil, now: 0)
        #expect(bucket.take(10, now: 0) == .zero)
    }
}

struct RedactedURLTests {
    @Test(arguments: [
        ("https://b.example/k?X-Amz-Signature=abc", "https://b.example/k?<redacted>"),
        ("http://h/p", "http://h/p"),
        ("http://h/p#frag", "http://h/p"),
    ])
    func redacts(_ url: String, _ expected: String) {
        #expect(RedactedURL.redact(url) == expected)
    }

    /// A proxy keeps its user and loses its password, the same as `ProxyServer.description` shows it.
    @Test(arguments: [
        ("http://fleet:s3cret@127.0.0.1:9", "http://fleet:<redacted>@127.0.0.1:9"),
        ("http://us@er:pw@proxy:8080", "http://us@er:<redacted>@proxy:8080"),
        ("http://fleet@proxy:8080", "http://fleet@proxy:8080"),
        ("socks5://a:b:c@p:1080/x", "socks5://a:<redacted>@p:1080/x"),
        ("proxy:3128", "proxy:3128"),
        ("", ""),
    ])
    func proxiesKeepTheirUser(_ url: String, _ expected: String) throws {
        #expect(RedactedURL.withoutPassword(url) == expected)
        if url.hasPrefix("http://") {
            #expect(try ProxyServer.parse(url, origin: "t").description == expected)
        }
    }
}

struct RedirectPolicyTests {
    @Test(arguments: [
        ("http://a/x", "/y", 1, "http://a/y"),
        ("http://a/x/z", "w", 1, "http://a/x/w"),
        ("http://a/x", "https://b/y?sig=1", 1, "https://b/y?sig=1"),
        ("https://a/x", "https://b/y", 10, "https://b/y"),
        // A URL's credentials go on within the same scheme, host and port only (as curl sends them).
        ("http://u:p%40@a/x", "/y", 1, "http://u:p%40@a/y"),
        ("http://u:p@a/x", "http://A:80/y", 1, "http://u:p@A:80/y"),
        ("https://u:p@a:8443/x", "https://a:8443/y", 1, "https://u:p@a:8443/y"),
        ("http://u:p@a/x", "http://b/y", 1, "http://b/y"),
        ("http://u:p@a/x", "http://a:8080/y", 1, "http://a:8080/y"),
        ("http://u:p@a/x", "https://a/y", 1, "https://a/y"),
        ("http://u:p@a/x", "http://v:q@a/y", 1, "http://v:q@a/y"),
    ])
    func follows(_ url: String, _ location: String, _ count: Int, _ expected: String) throws {
        let next = try RedirectPolicy.follow(from: url, location: location, count: count).get()
        #expect(next == expected)
    }

    @Test(arguments: [
        ("https://a/x", "http://a/y", 1, TransferError.Code.insecureRedirect),
        ("https://a/x", "/y", 11, .tooManyRedirects),
        ("http://a/x", "ftp://a/y", 1, .invalidURL),
        ("http://a/x", "file:///etc/passwd", 1, .invalidURL),
    ])
    func refuses(_ url: String, _ location: String, _ count: Int, _ code: TransferError.Code) {
        guard case .failure(let error) = RedirectPolicy.follow(from: url, location: location, count: count) else {
            Issue.record("expected \(code)")
            return
        }
        #expect(error.code == code)
    }
}

struct PublishTests {
    /// A finished partial file whose rename fails (the destination appeared meanwhile) is still a partial file:
    /// private to its owner again, not left readable by everyone.
    @Test func aPartialFileThatCannotTakeItsNameStaysPrivate() throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let directory = try OutputDirectory.open(holding: fixture.path("f.iso"), identity: nil)
        let fd = try #require(try directory.createIfAbsent("f.iso.mirror-part", mode: 0o600))
        defer { close(fd) }
        #expect(FileManager.default.createFile(atPath: fixture.path("f.iso"), contents: Data("other".utf8)))
        #expect(throws: TransferError.self) {
            try directory.publish(fd, "f.iso.mirror-part", as: "f.iso", mode: 0o644, replace: false)
        }
        var st = stat()
        #expect(fstat(fd, &st) == 0)
        #expect(st.st_mode & 0o777 == 0o600)
        try directory.publish(fd, "f.iso.mirror-part", as: "f.iso", mode: 0o644, replace: true)
        #expect(fstat(fd, &st) == 0)
        #expect(st.st_mode & 0o777 == 0o644)
        #expect(!Fixture.exists(fixture.path("f.iso.mirror-part")))
    }
}

struct EmptyPartialTests {
    /// A run that gives way (`outputBusy`) tidies only an empty partial file no run holds: the `.part` of the
    /// download it gave way to is locked, empty while that one waits for its first answer, and stays.
    @Test func anEmptyPartialAnotherRunHoldsIsLeftAlone() throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let partial = fixture.path("out.bin.part")
        let fd = open(partial, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        #expect(fd >= 0)
        #expect(flock(fd, LOCK_EX | LOCK_NB) == 0)
        let download = Download(request: DownloadRequest(url: "http://127.0.0.1:9/f", destination: fixture.path()))
        download.removeEmptyPartial()
        #expect(Fixture.exists(partial), "the held partial file was removed")
        close(fd)
        download.removeEmptyPartial()
        #expect(!Fixture.exists(partial), "an empty partial file no run holds stays")
    }
}

/// A download URL or a proxy naming an IPv6 zone is refused at once, saying so (it was tried 8 times over a
/// minute and reported as a host name DNS could not resolve).
struct IPv6ZoneTests {
    @Test(arguments: ["http://[fe80::1%25lo]:8080/f", "https://[::1%25eth0]/f", "http://[fe80::1%lo]/f"])
    func aZoneIsRefusedWithTheReason(_ url: String) throws {
        let problem = try #require(DownloadURL.problem(url))
        #expect(problem.contains("IPv6 zone"), "\(problem)")
        let error = try #require(throws: TransferError.self) { try ProxyServer.parse(url, origin: "--proxy") }
        #expect(error.message.contains("IPv6 zone"), "\(error.message)")
    }

    @Test func anAddressWithoutAZoneIsAccepted() {
        #expect(DownloadURL.problem("http://[fe80::1]:8080/f") == nil)
        #expect(DownloadURL.problem("http://[::1]/a%25b") == nil)
    }
}
