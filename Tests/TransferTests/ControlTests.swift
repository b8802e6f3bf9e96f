import Foundation
import RangeServer
import Synchronization
import TestSupport
import Testing

@testable import Transfer

/// Pause, resume, cancel, damaged partial files, existing outputs and the rate limit.
@Suite(.serialized)
struct ControlTests {
    static let content = RangeContent.generated(size: 10 << 20, seed: 5)

    @Test func damagedChunkIsFetchedAgainAndNothingElse() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        try await Fixture.withServer(content: Self.content, faults: [.throttle(bytesPerSecond: 8 << 20)]) { server in
            let request = fixture.request(server, segments: 1)
            let (first, _) = try await Fixture.runPausing(Download(request: request), at: 5 << 20)
            #expect(first == .paused)
            let data = try #require(FileManager.default.contents(atPath: request.checkpointPath))
            let checkpoint = try JSONDecoder().decode(Checkpoint.self, from: data)
            #expect(checkpoint.version == Checkpoint.currentVersion)
            let saved = checkpoint.bytesDone
            #expect(saved >= 2 * Fixture.mib)

            // Damage one byte of chunk 1 (a torn write after a crash).
            let handle = try #require(FileHandle(forUpdatingAtPath: request.partialPath))
            try handle.seek(toOffset: UInt64(Fixture.mib + 17))
            let original = try #require(try handle.read(upToCount: 1))
            try handle.seek(toOffset: UInt64(Fixture.mib + 17))
            try handle.write(contentsOf: Data([original[0] ^ 0xff]))
            try handle.close()

            try await server.waitUntilIdle()
            server.setFaults([])
            let (second, events) = try await Fixture.runCollecting(Download(request: request))
            let result = try #require(second.result)
            #expect(result.sha256 == Self.content.sha256Hex())
            #expect(result.resumedBytes == saved - Fixture.mib)
            #expect(result.bytesFetched == Self.content.size - saved + Fixture.mib)
            #expect(
                events.contains { if case .warning(let w) = $0 { return w.contains("damaged") } else { return false } })
        }
    }

    @Test func cancelRemovesPartialAndCheckpoint() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        try await Fixture.withServer(content: Self.content, faults: [.throttle(bytesPerSecond: 2 << 20)]) { server in
            let request = fixture.request(server)
            let download = Download(request: request)
            async let outcome = download.run()
            for await event in download.events {
                if case .progress(let p) = event, p.bytesDone > 1 << 20 {
                    await download.cancel()
                }
                if case .cancelled = event { break }
            }
            let ended = try await outcome
            #expect(ended == .cancelled)
            #expect(!Fixture.exists(request.partialPath))
            #expect(!Fixture.exists(request.checkpointPath))
            #expect(!Fixture.exists(request.destination))
        }
    }

    @Test func pauseStopsReadingQuickly() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        try await Fixture.withServer(content: Self.content, faults: [.throttle(bytesPerSecond: 2 << 20)]) { server in
            let counter = ByteCounter()
            var request = fixture.request(server, segments: 2)
            request.onBytes = { counter.add($0) }
            let download = Download(request: request)
            async let outcome = download.run()
            let clock = ContinuousClock()
            var pauseTook = Duration.zero
            for await event in download.events {
                if case .progress(let p) = event, p.bytesDone > 1 << 20 {
                    pauseTook = await clock.measure { await download.pause() }
                    break
                }
            }
            let ended = try await outcome
            #expect(ended == .paused)
            let afterPause = counter.value
            // The server sees every connection closed: no byte can reach the download after that (the
            // throttled server would still be sending on a connection left open and read).
            try await server.waitUntilIdle(timeout: .seconds(5))
            #expect(server.openConnections == 0, "a connection is still open after the pause")
            #expect(counter.value == afterPause, "bytes were read after the pause returned")
            // Cancelling is immediate; the bound covers the checkpoint's fsync on a loaded CI machine.
            print("pause took \(pauseTook)")
            #expect(pauseTook < .seconds(2))
            #expect(Fixture.exists(request.checkpointPath))
        }
    }

    @Test func existingOutputNeedsForce() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let small = RangeContent.generated(size: 100_000, seed: 6)
        try await Fixture.withServer(content: small) { server in
            var request = fixture.request(server)
            _ = FileManager.default.createFile(atPath: request.destination, contents: Data("keep".utf8))
            await #expect(throws: TransferError.self) { try await Download(request: request).run() }
            #expect(try String(contentsOfFile: request.destination, encoding: .utf8) == "keep")
            request.force = true
            let outcome = try await Download(request: request).run()
            #expect(outcome.result?.sha256 == small.sha256Hex())
            #expect(Fixture.sha256(file: request.destination) == small.sha256Hex())
        }
    }

    @Test func wrongExpectedChecksumFails() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let small = RangeContent.generated(size: 100_000, seed: 7)
        try await Fixture.withServer(content: small) { server in
            var request = fixture.request(server)
            request.expectedSHA256 = String(repeating: "0", count: 64)
            do throws(TransferError) {
                _ = try await Download(request: request).run()
                Issue.record("expected a checksum failure")
            } catch {
                #expect(error.code == .checksumMismatch)
                #expect(error.message.contains(small.sha256Hex()))
            }
            #expect(!Fixture.exists(request.destination))
        }
    }

    @Test func rateLimitHoldsAndCanBeLifted() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let content = RangeContent.generated(size: 3 << 20, seed: 8)
        try await Fixture.withServer(content: content) { server in
            var request = fixture.request(server, segments: 1)
            request.rateLimit = 512 << 10
            let download = Download(request: request)
            let clock = ContinuousClock()
            let start = clock.now
            async let outcome = download.run()
            var liftedAt: ContinuousClock.Instant?
            for await event in download.events {
                if case .progress(let p) = event, liftedAt == nil, p.bytesDone >= 512 << 10 {
                    liftedAt = clock.now
                    download.setRateLimit(nil)
                }
                if case .completed = event { break }
            }
            let ended = try await outcome
            let result = try #require(ended.result)
            #expect(result.sha256 == content.sha256Hex())
            let lifted = try #require(liftedAt)
            // 512 KiB at 512 KiB/s takes about 1 s (the bucket holds 100 ms of burst)...
            #expect(lifted - start >= .milliseconds(700))
            // ... and the remaining 2.5 MiB, which would take 5 s limited, go unlimited.
            #expect(clock.now - lifted < .seconds(2.5))
        }
    }

    @Test func checkpointFormatIsDocumentedVersionTwo() throws {
        let checkpoint = Checkpoint(
            url: "https://h/f?sig=1", destination: "/tmp/f", validators: Validators(etag: "\"e\"", lastModified: nil),
            totalBytes: 10, acceptRanges: true, chunkSize: 4, segments: [.init(start: 0, end: 10)],
            pieces: [.init(offset: 0, length: 4, crc32c: "e3069283")]
        )
        #expect(checkpoint.version == 2)
        let data = try JSONEncoder().encode(checkpoint)
        let text = String(decoding: data, as: UTF8.self)
        for key in [
            "\"format\"", "\"version\"", "\"validators\"", "\"pieces\"", "\"chunk_size\"", "\"total_bytes\"",
            "\"accept_ranges\"", "\"crc32c\"",
        ] {
            #expect(text.contains(key))
        }
        #expect(SnakeCase.violations(in: try JSONSerialization.jsonObject(with: data)).isEmpty)
        #expect(try Checkpoint.decode(data) == checkpoint)
    }

    /// A checkpoint written before keys became snake_case still resumes.
    @Test func checkpointWithOldCamelCaseKeysStillReads() throws {
        let old = #"""
            {"format":"meterwise-checkpoint","version":1,"url":"https://h/f","destination":"/tmp/f",
             "validators":{"etag":"\"e\"","lastModified":"Wed, 21 Oct 2015 07:28:00 GMT"},"totalBytes":10,
             "acceptRanges":true,"chunkSize":4,"segments":[{"start":0,"end":10}],
             "pieces":[{"offset":0,"length":4,"sha256":"ab"}]}
            """#
        let checkpoint = try Checkpoint.decode(Data(old.utf8))
        #expect(checkpoint.totalBytes == 10)
        #expect(checkpoint.chunkSize == 4)
        #expect(checkpoint.acceptRanges)
        #expect(checkpoint.validators.lastModified == "Wed, 21 Oct 2015 07:28:00 GMT")
        #expect(checkpoint.pieces == [.init(offset: 0, length: 4, sha256: "ab")])
    }
}

/// Counts bytes reported by `onBytes`.
final class ByteCounter: Sendable {
    private let total = Mutex(0)
    func add(_ n: Int) { total.withLock { $0 += n } }
    var value: Int { total.withLock { $0 } }
}

/// The optional HEAD URL lets segments start at once; a HEAD URL that fails is ignored.
struct HeadURLTests {
    @Test(arguments: [true, false])
    func headURLIsOptional(_ working: Bool) async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let content = RangeContent.generated(size: 9 << 20, seed: 41)
        try await Fixture.withServer(content: content) { server in
            var request = fixture.request(server, segments: 3)
            request.headURL = working ? server.url("/file?method=HEAD") : "not a URL"
            let (outcome, _) = try await Fixture.runCollecting(Download(request: request))
            #expect(outcome.result?.sha256 == content.sha256Hex())
            let methods = server.requests.map(\.method)
            #expect(methods.contains("HEAD") == working)
            if working {
                // No open-ended probe: every GET asked for a bounded range.
                #expect(server.requests.filter { $0.method == "GET" }.allSatisfy { $0.range?.hasSuffix("-") == false })
            }
        }
    }
}
