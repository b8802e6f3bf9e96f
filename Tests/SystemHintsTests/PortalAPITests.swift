import Foundation
import Links
import NIOSSL
import Synchronization
import SystemHints
import TestSupport
import Testing

/// The captive portal API (RFC 8908) that a DHCP lease names (RFC 8910): its answer checked, asked on a
/// schedule, joined to the link's hint; and asked for real over https.
@Suite struct PortalAPITests {
    static let json = "application/captive+json"

    func parse(_ text: String, type: String? = json) -> Result<PortalAPIAnswer, PortalAPIProblem> {
        PortalAPIAnswer.parse(Array(text.utf8), contentType: type)
    }

    @Test func anAnswerIsReadAsTheRFCNamesIt() throws {
        let captive = try parse(
            #"{"captive": true, "user-portal-url": "https://example.org/portal.html", "venue-info-url": "https://flight.example.com/entertainment"}"#,
            type: "application/captive+json; charset=utf-8"
        ).get()
        #expect(captive.captive)
        #expect(captive.userPortalURL == "https://example.org/portal.html")
        #expect(captive.hint.connectivity == .portal)
        #expect(captive.hint.connectivitySource == "rfc8908")
        #expect(captive.hint.portalURL == "https://example.org/portal.html")

        let open = try parse(
            #"{"captive": false, "user-portal-url": "https://example.org/portal.html", "seconds-remaining": 326, "bytes-remaining": 65536, "can-extend-session": true}"#
        ).get()
        #expect(!open.captive && open.secondsRemaining == 326 && open.bytesRemaining == 65536)
        #expect(open.hint.connectivity == .full)
        #expect(open.hint.portalURL == nil)
    }

    @Test func whatIsNotAnAnswerIsRefusedWithTheReason() {
        let cases: [(String, String?, String)] = [
            ("<html><body>Sign in</body></html>", "text/html", "not application/captive+json"),
            (#"{"captive": true}"#, nil, "no Content-Type"),
            (#"{"captive": 1}"#, Self.json, "boolean 'captive'"),
            (#"{"captive": "yes"}"#, Self.json, "boolean 'captive'"),
            (#"{"user-portal-url": "https://x/"}"#, Self.json, "boolean 'captive'"),
            (#"[true]"#, Self.json, "not a JSON object"),
            (#"{"captive": tru"#, Self.json, "not a JSON object"),
            (#"{"captive": true, "x": ""# + String(repeating: "a", count: 70_000) + #""}"#, Self.json, "64 KiB"),
        ]
        for (body, type, expected) in cases {
            guard case .failure(let problem) = parse(body, type: type) else {
                Issue.record("accepted \(body.prefix(40))")
                continue
            }
            #expect(problem.description.contains(expected), "\(body.prefix(40)): \(problem)")
        }
    }

    /// A URL that is not http(s) or not printable, or a number out of range, is dropped; the answer stands.
    @Test func badFieldsAreDroppedNotTrusted() throws {
        for url in ["javascript:alert(1)", "https://a b/", "https://x/\u{202E}gpj", "", "ftp://x/"] {
            let answer = try parse(#"{"captive": true, "user-portal-url": "\#(url)"}"#).get()
            #expect(answer.userPortalURL == nil, "\(url)")
        }
        for seconds in ["-1", "1e300", "\"600\"", "true", "1e10"] {
            let answer = try parse(#"{"captive": false, "seconds-remaining": \#(seconds)}"#).get()
            #expect(answer.secondsRemaining == nil, "\(seconds)")
        }
        #expect(try parse(#"{"captive": false, "seconds-remaining": 12.9}"#).get().secondsRemaining == 12)
    }

    @Test func theScheduleAsksAgainOnlyWhileTheAnswerCanChangeByItself() {
        let schedule = PortalAPISchedule()
        let captive = Result<PortalAPIAnswer, PortalAPIProblem>.success(PortalAPIAnswer(captive: true))
        #expect(schedule.next(after: captive, repeats: 0) == .seconds(5))
        #expect(schedule.next(after: captive, repeats: 1) == .seconds(10))
        #expect(schedule.next(after: captive, repeats: 10) == .seconds(60))
        #expect(schedule.next(after: captive, repeats: Int.max) == .seconds(60))
        let open = Result<PortalAPIAnswer, PortalAPIProblem>.success(PortalAPIAnswer(captive: false))
        #expect(schedule.next(after: open, repeats: 0) == nil)
        let session = Result<PortalAPIAnswer, PortalAPIProblem>.success(
            PortalAPIAnswer(captive: false, secondsRemaining: 300))
        #expect(schedule.next(after: session, repeats: 0) == .seconds(301))
        let ending = Result<PortalAPIAnswer, PortalAPIProblem>.success(
            PortalAPIAnswer(captive: false, secondsRemaining: 0))
        #expect(schedule.next(after: ending, repeats: 0) == .seconds(5))
        let failed = Result<PortalAPIAnswer, PortalAPIProblem>.failure(PortalAPIProblem("unreachable"))
        #expect(schedule.next(after: failed, repeats: 0) == .seconds(30))
        #expect(schedule.next(after: failed, repeats: 5) == .seconds(600))
    }

    /// A lease names an API: the link is `portal` with the API's sign-in page while captive, asked again on
    /// the schedule, and `full` once the user signed in; the lease's other facts stay; a lease that drops
    /// the API drops the answer and the asking.
    @Test func theAnswerJoinsTheLinksHintAndFollowsTheSignIn() async throws {
        let api = "https://portal.example/api"
        var lease = LinkHint(metered: true, meteredSource: "networkd: DHCP ANDROID_METERED")
        lease.portalAPI = api
        let (leases, feed) = AsyncStream.makeStream(of: LinkHints.self)
        let answers = Mutex<[Result<PortalAPIAnswer, PortalAPIProblem>]>([
            .failure(PortalAPIProblem("unreachable")),
            .success(PortalAPIAnswer(captive: true, userPortalURL: "https://portal.example/login")),
            .success(PortalAPIAnswer(captive: true, userPortalURL: "https://portal.example/login")),
            .success(PortalAPIAnswer(captive: false)),
        ])
        let asked = Mutex<[String]>([])
        var schedule = PortalAPISchedule()
        schedule.captive = .milliseconds(20)
        schedule.failure = .milliseconds(20)
        let source = PortalAPIHints(
            base: StreamSource(stream: leases),
            query: { url in
                asked.withLock { $0.append(url) }
                return answers.withLock { $0.count > 1 ? $0.removeFirst() : $0[0] }
            }, schedule: schedule)
        var seen: [LinkHints] = []
        feed.yield(LinkHints(byName: ["wlan0": lease], sources: ["networkd"]))
        for await hints in source.hints() {
            seen.append(hints)
            if hints.byName["wlan0"]?.connectivity == .full { break }
        }
        let portal = try #require(seen.first { $0.byName["wlan0"]?.connectivity == .portal }?.byName["wlan0"])
        #expect(portal.portalURL == "https://portal.example/login")
        #expect(portal.connectivitySource == "rfc8908")
        #expect(portal.metered == true, "the lease's own facts stay")
        #expect(seen.first?.byName["wlan0"]?.connectivity == nil, "a failed first answer says nothing")
        #expect(seen.last?.sources == ["networkd", "rfc8908"])
        #expect(asked.withLock { $0 } == [api, api, api, api])
        #expect(!seen.contains { $0.byName["wlan0"]?.portalURL == api }, "the API's URL is never a page to sign in at")
        feed.finish()
    }

    /// The real query over https against nginx with a CA made for the test: the answer, a page that is
    /// not one, a redirect not followed, an http URL and an untrusted certificate refused.
    @Test(.needsNginx, .needsOpenSSL) func theRealQueryAsksOverHTTPS() async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        let root = NSTemporaryDirectory() + "mw-capport-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        try #"{"captive": true, "user-portal-url": "https://127.0.0.1/login"}"#.write(
            toFile: root + "/api", atomically: true, encoding: .utf8)
        try "<html>Sign in</html>".write(toFile: root + "/page.html", atomically: true, encoding: .utf8)
        let nginx = try Nginx(
            root: root,
            location:
                "location = /api { default_type application/captive+json; } location = /moved { return 302 /api; }",
            tls: "ssl_certificate \(pki.path("server.crt")); ssl_certificate_key \(pki.path("server.key"));")
        defer { nginx.stop() }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(pki.path("ca.crt")))
        let query = PortalAPIQuery.live(tls: tls)

        let answer = try await query(nginx.url("/api")).get()
        #expect(answer.captive && answer.userPortalURL == "https://127.0.0.1/login")
        let page = await query(nginx.url("/page.html"))
        #expect(page.problem?.contains("text/html") == true, "\(page)")
        let moved = await query(nginx.url("/moved"))
        #expect(moved.problem?.contains("HTTP 302") == true, "\(moved)")
        let plain = await query(nginx.url("/api").replacingOccurrences(of: "https://", with: "http://"))
        #expect(plain.problem?.contains("not an https URL") == true, "\(plain)")
        let untrusted = await PortalAPIQuery.live()(nginx.url("/api"))
        #expect(untrusted.problem?.contains("cannot be asked") == true, "\(untrusted)")

        // The whole chain as the daemon runs it: networkd's lease file (loopback's, index 1) names the API,
        // the API says captive, then, signed in, not captive.
        let leases = root + "/leases"
        try FileManager.default.createDirectory(atPath: leases, withIntermediateDirectories: true)
        try "ADDRESS=127.0.0.1\nCAPTIVE_PORTAL=\(nginx.url("/api"))\n".write(
            toFile: leases + "/1", atomically: true, encoding: .utf8)
        var schedule = PortalAPISchedule()
        schedule.captive = .milliseconds(50)
        let source = PortalAPIHints(base: NetworkdLeaseHints(directory: leases), query: query, schedule: schedule)
        var states: [Connectivity?] = []
        for await hints in source.hints() {
            let lo = hints.byName["lo"]
            if states.last != lo?.connectivity { states.append(lo?.connectivity) }
            if lo?.connectivity == .portal {
                #expect(lo?.portalURL == "https://127.0.0.1/login")
                try #"{"captive": false}"#.write(toFile: root + "/api", atomically: true, encoding: .utf8)
            }
            if lo?.connectivity == .full { break }
        }
        // The first hints wait for the first answer: a one-shot `links` sees it.
        #expect(states == [.portal, .full])
    }
}

/// A hint source that yields what a test feeds it.
struct StreamSource: LinkHintSource {
    let stream: AsyncStream<LinkHints>
    func hints() -> AsyncStream<LinkHints> { stream }
}

extension Result where Failure == PortalAPIProblem {
    var problem: String? {
        if case .failure(let problem) = self { return problem.description }
        return nil
    }
}
