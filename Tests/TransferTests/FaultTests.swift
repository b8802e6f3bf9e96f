import RangeServer
import Testing

@testable import Transfer

/// One test per fault row of the range server, each asserting the final file's sha256.
@Suite(.serialized)
struct FaultTests {
    static let size: Int64 = 12 << 20
    static let original = RangeContent.generated(size: size, seed: 1)
    static let replacement = RangeContent.generated(size: size + 12345, seed: 2)

    /// A fault applied on a resume: the first run is paused at 3 MiB (server throttled), then the
    /// server changes as the row says and the second run must produce `expected`.
    struct ResumeRow: Sendable, CustomTestStringConvertible {
        var name: String
        var faults: [RangeFault]
        var replace = false
        var segments: Int? = nil
        var unvalidated = false
        var firstRunFaults: [RangeFault] = []
        var expectRestart: Bool
        var testDescription: String { name }
    }

    static let resumeRows: [ResumeRow] = [
        ResumeRow(
            name: "server ignores Range on resume: restart, correct file", faults: [.ignoreRange], expectRestart: true),
        ResumeRow(
            name: "object replaced, server ignores If-Match (206 with new ETag): restart with the new object",
            faults: [.ignorePreconditions], replace: true, segments: 3, expectRestart: true
        ),
        ResumeRow(
            name: "object replaced, If-Match answered 412: restart with the new object", faults: [], replace: true,
            expectRestart: true),
        ResumeRow(
            name: "206 starting earlier than asked: restart", faults: [.earlierStart(by: 1000, times: 1)],
            expectRestart: true),
        ResumeRow(name: "416 while resuming: restart", faults: [.rangeNotSatisfiable(times: 1)], expectRestart: true),
        ResumeRow(
            name: "weak ETag: Last-Modified is the validator, resume without restart",
            faults: [.weakETag], firstRunFaults: [.weakETag], expectRestart: false
        ),
        ResumeRow(
            name: "no validators: the partial file is discarded with a warning",
            faults: [.noValidators], firstRunFaults: [.noValidators], expectRestart: false
        ),
        ResumeRow(
            name: "no validators with --resume-unvalidated: resumed",
            faults: [.noValidators], unvalidated: true, firstRunFaults: [.noValidators], expectRestart: false
        ),
        ResumeRow(name: "plain resume over 4 segments", faults: [], segments: 4, expectRestart: false),
    ]

    @Test(arguments: resumeRows)
    func resumesThrough(_ row: ResumeRow) async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        try await Fixture.withServer(
            content: Self.original, faults: row.firstRunFaults + [.throttle(bytesPerSecond: 4 << 20)]
        ) {
            server in
            var request = fixture.request(server, segments: row.segments)
            request.resumeUnvalidated = row.unvalidated
            let first = Download(request: request)
            let (outcome1, _) = try await Fixture.runPausing(first, at: 3 << 20)
            #expect(outcome1 == .paused)
            #expect(Fixture.exists(request.checkpointPath))

            // Requests the pause cancelled may still be on the wire: let them land before changing faults.
            try await server.waitUntilIdle()
            if row.replace { server.setContent(Self.replacement) }
            server.setFaults(row.faults)
            let second = Download(request: request)
            let (outcome2, events) = try await Fixture.runCollecting(second)
            let expected = row.replace ? Self.replacement : Self.original
            let result = try #require(outcome2.result)
            #expect(result.sha256 == expected.sha256Hex())
            #expect(Fixture.sha256(file: request.destination) == expected.sha256Hex())
            #expect(!Fixture.exists(request.checkpointPath))
            #expect(!Fixture.exists(request.partialPath))
            #expect((events.restarts > 0) == row.expectRestart)
            let noValidators = row.faults.contains { if case .noValidators = $0 { return true } else { return false } }
            if !row.expectRestart && !(noValidators && !row.unvalidated) {
                // A real resume: the second run fetched less than the whole object.
                #expect(result.bytesFetched < expected.size)
                #expect(result.resumedBytes > 0)
            }
        }
    }

    struct FreshRow: Sendable, CustomTestStringConvertible {
        var name: String
        var faults: [RangeFault]
        var size: Int64 = 6 << 20
        var segments: Int? = nil
        var replaced = false
        var minRequests = 1
        var minRetryDelay: Duration? = nil
        var testDescription: String { name }
    }

    static let freshRows: [FreshRow] = [
        FreshRow(
            name: "body truncated: retried from the checkpoint", faults: [.truncate(after: 1_500_000, times: 3)],
            minRequests: 4),
        FreshRow(
            name: "connection reset: retried", faults: [.reset(after: 700_000, times: 3)], segments: 2, minRequests: 4),
        FreshRow(name: "throttled: completes", faults: [.throttle(bytesPerSecond: 16 << 20)], size: 2 << 20),
        FreshRow(
            name: "503 with Retry-After: waits and retries", faults: [.unavailable(retryAfter: 1, times: 2)],
            minRequests: 3,
            minRetryDelay: .seconds(1)
        ),
        FreshRow(
            name: "new object after N bytes: restart with the new object",
            faults: [.replace(afterBytes: 2 << 20, with: RangeContent.generated(size: 5 << 20, seed: 9))], segments: 2,
            replaced: true
        ),
        FreshRow(name: "server ignores Range from the start: one stream", faults: [.ignoreRange], size: 9 << 20),
        FreshRow(name: "weak ETag on a fresh download", faults: [.weakETag], size: 9 << 20),
        FreshRow(name: "no validators on a fresh download", faults: [.noValidators], size: 9 << 20),
    ]

    @Test(arguments: freshRows)
    func completesDespite(_ row: FreshRow) async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let content = RangeContent.generated(size: row.size, seed: 3)
        try await Fixture.withServer(content: content, faults: row.faults) { server in
            let request = fixture.request(server, segments: row.segments)
            let (outcome, events) = try await Fixture.runCollecting(Download(request: request))
            let result = try #require(outcome.result)
            let expected = row.replaced ? server.content.sha256Hex() : content.sha256Hex()
            #expect(result.sha256 == expected)
            #expect(Fixture.sha256(file: request.destination) == expected)
            #expect(server.requestCount >= row.minRequests)
            if let minRetryDelay = row.minRetryDelay {
                #expect(events.retries.contains { $0 >= minRetryDelay })
            }
            if row.replaced { #expect(events.restarts > 0) }
            // Retries resume where they stopped: at most one chunk per retry is received twice, plus what a
            // segment reads past an end that another segment stole (at most a buffer or so each).
            #expect(result.refetchedBytes <= Int64(events.retries.count + events.restarts * 8 + 4) * Fixture.mib)
        }
    }
}
