import Foundation
import RangeServer
import TestSupport
import Testing

@testable import Transfer

/// Nothing at the end of a transfer waits on the peer (issue 26): a server that stops reading and never
/// closes, never sending TLS `close_notify` (`RangeFault.mute`), does not delay a completed download, a
/// pause or a cancel; and a segmented download asks only for what it keeps, so no response is cut short.
@Suite(.serialized, .needsOpenSSL)
struct PeerWaitTests {
    static let content = RangeContent.generated(size: 16 << 20, seed: 2026)
    /// The most a completed download may end after the server flushed its last byte.
    static let allowed: Duration = .milliseconds(100)

    /// Runs `body` with a RangeServer (TLS when `tls`) that has `faults`, and a request trusting its CA.
    static func withServer(
        tls: Bool, faults: [RangeFault] = [.mute], content: RangeContent = content,
        _ body: (RangeServer, DownloadRequest, Fixture) async throws -> Void
    ) async throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        // tmpfs where there is one: the final fdatasync of a disk would be timed with the peer.
        let fixture = Fixture(base: FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : nil)
        defer { fixture.remove() }
        let server = try await RangeServer.start(
            content: content, faults: faults, tls: tls ? try pki.serverTLS() : nil)
        var request = fixture.request(server)
        if tls { request.tls = try TLSSettings.load(caFile: pki.path("ca.crt")) }
        do {
            try await body(server, request, fixture)
            try await server.shutdown()
        } catch {
            try? await server.shutdown()
            throw error
        }
    }

    /// Runs the download; returns its result and how long after the server's last response ended it returned.
    static func completed(_ request: DownloadRequest, server: RangeServer) async throws -> (DownloadResult, Duration) {
        let outcome = try await Download(request: request).run()
        let returned = ContinuousClock.now
        guard case .completed(let result) = outcome else {
            throw TransferError(.protocolViolation, "not completed: \(outcome)")
        }
        let last = try #require(server.lastResponseEnd)
        return (result, returned - last)
    }

    @Test(arguments: [true, false])
    func aServerThatNeverClosesDoesNotDelayCompletion(tls: Bool) async throws {
        try await Self.withServer(tls: tls) { server, request, _ in
            let (result, after) = try await Self.completed(request, server: server)
            #expect(result.sha256 == Self.content.sha256Hex())
            #expect(after < Self.allowed, "completed \(after) after the server's last byte (tls: \(tls))")
        }
    }

    @Test(.needsProxy) func throughAProxyTunnelTheEndWaitsOnNoOne() async throws {
        let proxy = try Tinyproxy()
        defer { proxy.stop() }
        try await Self.withServer(tls: true) { server, request, _ in
            var request = request
            request.proxy = try ProxySettings.environment(["https_proxy": proxy.url])
            let (result, after) = try await Self.completed(request, server: server)
            #expect(result.sha256 == Self.content.sha256Hex())
            #expect(after < Self.allowed, "completed \(after) after the server's last byte")
            #expect(result.discardedBytes == 0)
            #expect(proxy.connects.contains("127.0.0.1:\(server.port)"), "\(proxy.log)")
        }
    }

    /// A pause and a cancel cut a response the server is still sending, and it reads nothing meanwhile: the
    /// TLS close is not answered, and nothing waits for it.
    @Test func aPauseOrCancelCutsADeafTLSConnectionAtOnce() async throws {
        try await Self.withServer(tls: true, faults: [.mute, .throttle(bytesPerSecond: 2 << 20)]) {
            server, request, fixture in
            for cancel in [false, true] {
                var request = request
                request.destination = fixture.path(cancel ? "cancelled.bin" : "paused.bin")
                request.segments = 1
                let download = Download(request: request)
                async let outcome = download.run()
                for await event in download.events {
                    if case .progress(let p) = event, p.bytesDone >= 1 << 20 { break }
                }
                let asked = ContinuousClock.now
                if cancel { await download.cancel() } else { await download.pause() }
                let ended = try await outcome
                let took = ContinuousClock.now - asked
                if cancel {
                    guard case .cancelled = ended else { throw TransferError(.protocolViolation, "\(ended)") }
                } else {
                    guard case .paused = ended else { throw TransferError(.protocolViolation, "\(ended)") }
                }
                // The pause reads on for at most `PauseDrain.longest` (50 ms) and flushes a checkpoint.
                #expect(took < .milliseconds(500), "\(cancel ? "cancel" : "pause") took \(took)")
            }
        }
    }

    /// A server that caps the size of a range (a valid 206 for the first 300 000 bytes of what was asked, as
    /// some CDNs do): each answer is taken as far as it goes and the next request goes on from there, with no
    /// retry, no wait and nothing fetched twice.
    @Test func aCappedRangeIsContinuedNotRetried() async throws {
        try await Self.withServer(tls: false, faults: [.capRanges(300_000)]) { server, request, _ in
            var request = request
            request.maxRetries = 0
            let (outcome, events) = try await Fixture.runCollecting(Download(request: request))
            guard case .completed(let result) = outcome else {
                Issue.record("\(outcome)")
                return
            }
            #expect(result.sha256 == Self.content.sha256Hex())
            #expect(result.discardedBytes == 0)
            #expect(result.refetchedBytes == 0)
            let retries = events.filter { if case .retrying = $0 { return true } else { return false } }
            #expect(retries.isEmpty, "\(retries)")
            #expect(server.requests.allSatisfy { $0.status == 206 && $0.bodyBytes <= 300_000 })
            #expect(server.requestCount >= Int(Self.content.size / 300_000))
        }
    }

    /// One segment's request crawls (256 KiB/s for the 2 MiB it asked): the others take what it has not asked
    /// for, then cut into its request rather than wait 8 s for it; the cut throws away little.
    /// 256 KiB chunks and `get`'s 4 MiB ones: the slow segment's 4 MiB is under two chunks of the latter, and it
    /// is cut all the same (it kept it whole, 16 s, before steals took a finer grain than the chunk).
    @Test(arguments: [Int64(256 << 10), 4 << 20])
    func theEndDoesNotWaitOnACrawlingRequest(chunkSize: Int64) async throws {
        try await Self.withServer(tls: false, faults: [.throttleAt(start: 4 << 20, bytesPerSecond: 256 << 10)]) {
            server, request, _ in
            var request = request
            request.chunkSize = chunkSize
            guard let (result, took) = try await Self.timed(request) else { return }
            #expect(result.sha256 == Self.content.sha256Hex())
            #expect(server.requests.contains { $0.start == 4 << 20 }, "\(server.requests)")
            #expect(took < .seconds(5), "took \(took)")
            #expect(result.discardedBytes + result.refetchedBytes < 256 << 10, "\(result) \(Self.served(server))")
        }
    }

    /// Runs `request` to its end: its result and how long it took (nil, with the issue recorded, when it did not
    /// complete).
    static func timed(_ request: DownloadRequest) async throws -> (DownloadResult, Duration)? {
        let clock = ContinuousClock()
        let started = clock.now
        let outcome = try await Download(request: request).run()
        guard case .completed(let result) = outcome else {
            Issue.record("\(outcome)")
            return nil
        }
        return (result, clock.now - started)
    }

    /// What the server answered, for a failed expectation.
    static func served(_ server: RangeServer) -> String {
        "\(server.requests.map { "\($0.range ?? "-") \($0.status) \($0.bodyBytes)" })"
    }

    /// One segment's request gets its first megabyte at once and the rest at 256 KiB/s (a rate limit that starts
    /// after a burst): judged on its whole body's average, it looked fast enough to wait for until its end, 4 s
    /// later; judged on its last half second to second, it is cut about a second in.
    @Test func aRequestThatCrawlsAfterAFastStartIsCut() async throws {
        try await Self.withServer(
            tls: false, faults: [.throttleAt(start: 4 << 20, bytesPerSecond: 256 << 10, burst: 1 << 20)]
        ) { server, request, _ in
            guard let (result, took) = try await Self.timed(request) else { return }
            #expect(result.sha256 == Self.content.sha256Hex())
            let slow = server.requests.filter { $0.start == 4 << 20 }
            #expect(slow.count == 1, "\(server.requests)")
            #expect(took < .milliseconds(2500), "took \(took)")
            #expect(result.discardedBytes + result.refetchedBytes < 256 << 10, "\(result) \(Self.served(server))")
        }
    }

    /// A server slow to answer one range (every response starting at 4 MiB gets its body 2.5 s late), or one that
    /// stalls a response mid-body for 10 s: the download ends in a few seconds, not after the stall, and never
    /// hands one range back and forth between two segments (a cut of everything the slow request had left made the
    /// next request start at the same byte, wait as long, and be cut in turn, for ever).
    @Test(arguments: [(Int64(0), 2.5), (512 << 10, 10.0)])
    func aRangeSlowToStartOrStalledDoesNotHoldTheDownload(after: Int64, seconds: Double) async throws {
        try await Self.withServer(tls: false, faults: [.stallAt(start: 4 << 20, after: after, seconds: seconds)]) {
            server, request, _ in
            let clock = ContinuousClock()
            let started = clock.now
            let outcome = try await withThrowingTaskGroup(of: DownloadOutcome?.self) { group in
                group.addTask { try await Download(request: request).run() }
                group.addTask {
                    try await Task.sleep(for: .seconds(30))
                    return nil
                }
                let first = try await group.next() ?? nil
                group.cancelAll()
                return first
            }
            let took = clock.now - started
            guard case .completed(let result)? = outcome else {
                Issue.record("not completed in 30 s: \(String(describing: outcome)); \(server.requests.count) requests")
                return
            }
            #expect(result.sha256 == Self.content.sha256Hex())
            #expect(took < .seconds(6), "took \(took)")
            let asked = server.requests.filter { $0.start == 4 << 20 }.count
            #expect(asked <= 2, "\(asked) requests started at 4 MiB")
            #expect(
                result.discardedBytes + result.refetchedBytes < 256 << 10,
                "\(result) \(server.requests.map { "\($0.range ?? "-") \($0.status) \($0.bodyBytes)" })")
        }
    }

    /// Four segments over TLS: every request is answered in full (none is cut short), nothing received is
    /// thrown away, and every byte is fetched once.
    @Test func aSegmentedDownloadAsksOnlyForWhatItKeeps() async throws {
        try await Self.withServer(tls: true, faults: []) { server, request, _ in
            let (result, _) = try await Self.completed(request, server: server)
            #expect(result.sha256 == Self.content.sha256Hex())
            #expect(result.discardedBytes == 0)
            #expect(result.refetchedBytes == 0)
            #expect(result.bytesFetched == Self.content.size)
            let served = server.requests
            #expect(served.count >= 4, "\(served)")
            for r in served {
                let range = try #require(r.range)
                let parts = range.dropFirst("bytes=".count).split(separator: "-", omittingEmptySubsequences: false)
                let first = try #require(Int64(parts[0]))
                let last = try #require(parts.count == 2 ? Int64(parts[1]) : nil, "open-ended ask \(range)")
                #expect(r.status == 206)
                #expect(r.bodyBytes == last - first + 1, "\(range) answered with \(r.bodyBytes) bytes")
            }
            #expect(served.reduce(0) { $0 + $1.bodyBytes } == Self.content.size)
        }
    }
}
