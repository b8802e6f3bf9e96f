import Foundation
import RangeServer
import Testing

@testable import Transfer

/// A download whose URL redirects (a download site sending to its CDN): once a body came from where the redirect
/// led, the later requests go there directly; an error answer from there goes back to the first URL once.
@Suite(.serialized)
struct RedirectReuseTests {
    /// At most 1 MiB a response: twelve requests at least for the 12 MiB object.
    static let capped: [RangeFault] = [.capRanges(1 << 20), .throttle(bytesPerSecond: 4 << 20)]

    /// Downloads `origin`'s URL, which redirects to `target` serving `content`, in `segments` segments.
    static func download(
        seed: UInt64, segments: Int,
        _ body: (_ origin: RangeServer, _ target: RangeServer, _ request: DownloadRequest) async throws -> Void
    ) async throws {
        let content = RangeContent.generated(size: 12 << 20, seed: seed)
        let target = try await RangeServer.start(content: content, faults: capped)
        let origin = try await RangeServer.start(content: content, faults: [.redirect(to: target.url())])
        defer {
            Task {
                try? await target.shutdown()
                try? await origin.shutdown()
            }
        }
        let fixture = Fixture()
        defer { fixture.remove() }
        var request = DownloadRequest(url: origin.url(), destination: fixture.path("out.bin"))
        request.segments = segments
        try await body(origin, target, request)
        #expect(Fixture.sha256(file: fixture.path("out.bin")) == content.sha256Hex())
    }

    @Test func laterRequestsGoWhereTheRedirectLed() async throws {
        try await Self.download(seed: 62, segments: 4) { origin, target, request in
            let (outcome, _) = try await Fixture.runCollecting(Download(request: request))
            #expect(outcome.result != nil, "\(outcome)")
            #expect(target.requestCount >= 12, "\(target.requestCount)")
            #expect(origin.requestCount <= 2, "the first URL was asked \(origin.requestCount) times")
        }
    }

    @Test func anErrorFromWhereTheRedirectLedAsksTheFirstURLAgain() async throws {
        try await Self.download(seed: 63, segments: 2) { origin, target, request in
            let breaker = Task {
                while target.bytesServed < 3 << 20 { try await Task.sleep(for: .milliseconds(20)) }
                // A signed link that expired: the next request there is refused.
                target.setFaults(Self.capped + [.unavailable(retryAfter: 0, times: 1)])
            }
            let (outcome, events) = try await Fixture.runCollecting(Download(request: request))
            try await breaker.value
            #expect(outcome.result != nil, "\(outcome)")
            #expect(
                origin.requestCount >= 2 && origin.requestCount <= 4,
                "the first URL was asked \(origin.requestCount) times")
            let retries = events.filter { if case .retrying = $0 { return true } else { return false } }
            #expect(retries.isEmpty, "going back to the first URL is not a failure: \(retries)")
        }
    }

    /// Signed links that expire again and again, each sent back to the first server, which signs one for the other
    /// node: every request counts only its own redirects, however many came before.
    @Test func eachRequestCountsItsOwnRedirects() async throws {
        try await Self.download(seed: 64, segments: 2) { origin, a, request in
            let b = try await RangeServer.start(content: a.content, faults: Self.capped)
            defer { Task { try? await b.shutdown() } }
            let swaps = Task { () -> Int in
                var (current, other) = (a, b)
                var swaps = 0
                var mark: Int64 = 0
                while current.bytesServed + other.bytesServed < a.content.size {
                    let served = current.bytesServed + other.bytesServed
                    if served - mark >= 3 << 19 {
                        mark = served
                        origin.setFaults([.redirect(to: other.url())])
                        current.setFaults(Self.capped + [.redirect(to: origin.url())])
                        other.setFaults(Self.capped)
                        (current, other) = (other, current)
                        swaps += 1
                    }
                    try await Task.sleep(for: .milliseconds(5))
                }
                return swaps
            }
            let (outcome, _) = try await Fixture.runCollecting(Download(request: request))
            swaps.cancel()
            let made = (try? await swaps.value) ?? 0
            #expect(outcome.result != nil, "\(outcome)")
            // Two hops an expiry: more than `RedirectPolicy`'s 10 in all.
            #expect(made >= 6, "only \(made) expiries")
        }
    }

    /// Where the redirect led breaks every body after its head (a node that fails): the next try asks the first
    /// server again, which sends it elsewhere, instead of going back to the broken node until retries run out.
    @Test func aBodyThatFailsWhereTheRedirectLedAsksTheFirstURLAgain() async throws {
        try await Self.download(seed: 65, segments: 2) { origin, a, request in
            let b = try await RangeServer.start(content: a.content, faults: Self.capped)
            defer { Task { try? await b.shutdown() } }
            var request = request
            request.maxRetries = 3
            let breaker = Task {
                while a.bytesServed < 3 << 20 { try await Task.sleep(for: .milliseconds(20)) }
                origin.setFaults([.redirect(to: b.url())])
                a.setFaults(Self.capped + [.reset(after: 0, times: 1_000_000)])
            }
            let (outcome, _) = try await Fixture.runCollecting(Download(request: request))
            try await breaker.value
            #expect(outcome.result != nil, "\(outcome)")
            #expect(b.bytesServed > 1 << 20, "the healthy node took no part: \(b.bytesServed)")
        }
    }

    /// Where the redirect led starts redirecting to itself: the request goes back to the first server, which sends
    /// it elsewhere, instead of failing with "More than 10 redirects".
    @Test func aLoopWhereTheRedirectLedAsksTheFirstURLAgain() async throws {
        try await Self.download(seed: 66, segments: 2) { origin, a, request in
            let b = try await RangeServer.start(content: a.content, faults: Self.capped)
            defer { Task { try? await b.shutdown() } }
            let breaker = Task {
                while a.bytesServed < 3 << 20 { try await Task.sleep(for: .milliseconds(20)) }
                origin.setFaults([.redirect(to: b.url())])
                a.setFaults(Self.capped + [.redirect(to: a.url())])
            }
            let (outcome, _) = try await Fixture.runCollecting(Download(request: request))
            try await breaker.value
            #expect(outcome.result != nil, "\(outcome)")
            #expect(b.bytesServed > 1 << 20, "the other node took no part: \(b.bytesServed)")
        }
    }

    /// A "latest" link that moved on while the download was paused: the URL now redirects to another version,
    /// whose server refuses the partial's ETag with 412. That is the object changing, not a portal: the download
    /// starts over with the new version (before, it waited as behind a captive portal until --force).
    @Test func aURLThatNowLeadsToAnotherVersionStartsOver() async throws {
        let old = RangeContent.generated(size: 12 << 20, seed: 71)
        let new = RangeContent.generated(size: 12 << 20, seed: 72)
        let origin = try await RangeServer.start(content: old, faults: [.throttle(bytesPerSecond: 4 << 20)])
        let next = try await RangeServer.start(content: new)
        defer {
            Task {
                try? await origin.shutdown()
                try? await next.shutdown()
            }
        }
        let fixture = Fixture()
        defer { fixture.remove() }
        var request = DownloadRequest(url: origin.url(), destination: fixture.path("out.bin"))
        request.segments = 2
        let (first, _) = try await Fixture.runPausing(Download(request: request), at: 3 << 20)
        #expect(first == .paused)
        origin.setFaults([.redirect(to: next.url("/v2"))])
        let (outcome, events) = try await Fixture.runCollecting(Download(request: request))
        #expect(outcome.result?.resumedBytes == 0, "\(outcome)")
        #expect(Fixture.sha256(file: fixture.path("out.bin")) == new.sha256Hex())
        #expect(events.contains { if case .restarted = $0 { true } else { false } }, "\(events)")
    }

    /// The same 412 from where a redirect led, where a page a tiny fraction of the object's size is served (a
    /// portal's login page whose server honours If-Match): still a portal, and the partial is kept.
    @Test func a412FromAPortalsPageIsStillAnInterception() async throws {
        let content = RangeContent.generated(size: 12 << 20, seed: 74)
        let origin = try await RangeServer.start(content: content, faults: [.throttle(bytesPerSecond: 4 << 20)])
        let portal = try await RangeServer.start(content: RangeContent.generated(size: 4096, seed: 75))
        defer {
            Task {
                try? await origin.shutdown()
                try? await portal.shutdown()
            }
        }
        let fixture = Fixture()
        defer { fixture.remove() }
        let request = DownloadRequest(url: origin.url(), destination: fixture.path("out.bin"))
        let (first, _) = try await Fixture.runPausing(Download(request: request), at: 3 << 20)
        #expect(first == .paused)
        origin.setFaults([.redirect(to: portal.url("/login"))])
        do {
            _ = try await Fixture.runCollecting(Download(request: request))
            Issue.record("a portal's 412 was taken as the object")
        } catch let error as TransferError {
            #expect(error.code == .intercepted, "\(error)")
        }
        #expect(Fixture.exists(fixture.path("out.bin.part.checkpoint")))
    }
}
