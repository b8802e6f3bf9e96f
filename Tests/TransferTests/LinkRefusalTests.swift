import Foundation
import RangeServer
import Synchronization
import Testing

@testable import Transfer

/// A download from one URL whose URL becomes reached over a link the job may not use while it runs
/// (`judgeSource` at a link change, `Download.retryNow`): its requests stop within a moment, it waits without
/// failing, and it goes on from where it stopped when the link is allowed again.
@Suite(.serialized)
struct LinkRefusalTests {
    @Test func aURLRefusedMidRunStopsItsRequestsAndGoesOnWhenAllowed() async throws {
        let content = RangeContent.generated(size: 12 << 20, seed: 61)
        // 1 MiB/s a connection, four segments: about 3 s in all.
        let server = try await RangeServer.start(content: content, faults: [.throttle(bytesPerSecond: 1 << 20)])
        defer { Task { try? await server.shutdown() } }
        let fixture = Fixture()
        defer { fixture.remove() }
        var request = DownloadRequest(url: server.url(), destination: fixture.path("out.bin"))
        request.segments = 4
        request.maxRetries = 1
        let refused = Mutex(false)
        request.judgeSource = { _ in refused.withLock { $0 } ? .refuse("it is reached over wwan0") : .use }
        let download = Download(request: request)
        async let finished = Fixture.runCollecting(download)
        try await Task.sleep(for: .milliseconds(800))
        refused.withLock { $0 = true }
        download.retryNow()
        // Every segment leaves its body at the next buffer it reads; what the sockets held is all that comes.
        try await Task.sleep(for: .milliseconds(1000))
        let stopped = server.bytesServed
        let requestsStopped = server.requestCount
        try await Task.sleep(for: .milliseconds(2500))
        #expect(server.bytesServed - stopped < 1 << 20, "bytes went on over the refused link")
        #expect(server.requestCount == requestsStopped, "a request was sent while the URL was refused")
        #expect(stopped < content.size, "the download ended before the link changed")
        refused.withLock { $0 = false }
        download.retryNow()
        let (outcome, events) = try await finished
        #expect(outcome.result != nil, "\(outcome)")
        #expect(Fixture.sha256(file: fixture.path("out.bin")) == content.sha256Hex())
        let reasons = events.compactMap { event -> String? in
            if case .retrying(_, _, let reason) = event { return reason }
            return nil
        }
        #expect(
            reasons.contains { $0.contains("may not be reached now: it is reached over wwan0") }, "\(reasons)")
        // Nothing was fetched twice: what was kept before the refusal was not asked again.
        #expect(server.bytesServed < content.size + (2 << 20), "served \(server.bytesServed)")
    }
}
