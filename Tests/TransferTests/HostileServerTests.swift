import AsyncHTTPClient
import Foundation
import RangeServer
import TestSupport
import Testing

@testable import Transfer

/// Servers that lie, stall, encode or never end; disks that fill. Each fails the download with a clear
/// error (or waits it out), never crashes it, never corrupts the output.
@Suite(.serialized) struct HostileServerTests {
    static let content = RangeContent.generated(size: 4 << 20, seed: 41)

    static func failure(_ download: Download) async -> (TransferError?, [DownloadEvent]) {
        async let events = Fixture.collect(download.events)
        do {
            _ = try await download.run()
            return (nil, await events)
        } catch {
            return (error, await events)
        }
    }

    @Test(arguments: [Int64.max, Int64.max / 2, Int64(1 << 50) + 1])
    func aHugeContentRangeTotalFailsTheDownloadNotTheProcess(_ claimed: Int64) async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        try await Fixture.withServer(content: Self.content, faults: [.claimTotal(claimed)]) { server in
            var request = fixture.request(server, segments: 4)
            request.maxRetries = 1
            let (error, _) = await Self.failure(Download(request: request))
            #expect(error?.code == .protocolViolation, "\(String(describing: error))")
            #expect(error?.message.contains("more than 1 PiB") == true)
            #expect(!Fixture.exists(request.destination))
        }
    }

    @Test func anEncodedBodyIsNeverWrittenIntoTheFile() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        try await Fixture.withServer(content: Self.content, faults: [.contentEncoding("gzip")]) { server in
            let request = fixture.request(server)
            let (error, _) = await Self.failure(Download(request: request))
            #expect(error?.code == .protocolViolation)
            #expect(error?.message.contains("Content-Encoding gzip") == true)
            #expect(!Fixture.exists(request.destination))
            #expect((try? FileManager.default.attributesOfItem(atPath: request.partialPath)[.size] as? Int) ?? 0 == 0)
        }
        // identity is identity.
        try await Fixture.withServer(content: Self.content, faults: [.contentEncoding("identity")]) { server in
            let request = fixture.request(server, name: "plain.bin")
            let (outcome, _) = try await Fixture.runCollecting(Download(request: request))
            #expect(outcome.result?.sha256 == Self.content.sha256Hex())
        }
    }

    @Test func aBodyOfUnknownLengthStopsAtTheMaximumSize() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        try await Fixture.withServer(content: Self.content, faults: [.noLength]) { server in
            var request = fixture.request(server)
            request.maxSize = 1 << 20
            let (error, _) = await Self.failure(Download(request: request))
            #expect(error?.code == .tooLarge, "\(String(describing: error))")
            let written = (try? FileManager.default.attributesOfItem(atPath: request.partialPath)[.size] as? Int) ?? 0
            #expect(written <= 1 << 20, "wrote \(written) bytes past the limit")
            // Without a limit the same body is complete and right (its length learned at its end).
            let whole = fixture.request(server, name: "whole.bin")
            let (outcome, _) = try await Fixture.runCollecting(Download(request: whole))
            #expect(outcome.result?.sha256 == Self.content.sha256Hex())
        }
    }

    @Test func aKnownLengthOverTheMaximumSizeFailsBeforeTheBody() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        try await Fixture.withServer(content: Self.content, faults: [.throttle(bytesPerSecond: 1 << 20)]) { server in
            var request = fixture.request(server)
            request.maxSize = 1 << 20
            let (error, _) = await Self.failure(Download(request: request))
            #expect(error?.code == .tooLarge)
            #expect(error?.message.contains("over the maximum size") == true)
            #expect(server.bytesServed < 1 << 20, "read \(server.bytesServed) bytes of a body it refused")
        }
    }

    @Test func aServerThatDripsBytesIsAbandonedByTheLowSpeedLimit() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        try await Fixture.withServer(content: Self.content, faults: [.throttle(bytesPerSecond: 200)]) { server in
            var request = fixture.request(server)
            request.lowSpeedLimit = 4096
            request.lowSpeedTime = .seconds(1)
            request.maxRetries = 2
            let started = ContinuousClock.now
            let (error, events) = await Self.failure(Download(request: request))
            #expect(error?.code == .retriesExhausted, "\(String(describing: error))")
            #expect(error?.message.contains("low-speed limit") == true, "\(String(describing: error))")
            #expect(events.retries.count == 2)
            #expect(ContinuousClock.now - started < .seconds(15))
        }
    }

    /// A server that sends the head and then nothing: below any low-speed limit, so `--speed-time` ends it too,
    /// not the 30 s read timeout (curl's `--speed-time` does the same).
    @Test func aServerThatStopsSendingIsAbandonedWithinTheSpeedTime() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        try await Fixture.withServer(content: Self.content, faults: [.throttle(bytesPerSecond: 0)]) { server in
            var request = fixture.request(server)
            request.lowSpeedLimit = 4096
            request.lowSpeedTime = .seconds(1)
            request.maxRetries = 1
            let started = ContinuousClock.now
            let (error, events) = await Self.failure(Download(request: request))
            #expect(error?.code == .retriesExhausted, "\(String(describing: error))")
            #expect(events.retries.count == 1)
            #expect(ContinuousClock.now - started < .seconds(10), "\(ContinuousClock.now - started)")
        }
    }

    @Test func waitingForAPooledConnectionIsNotAFailure() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        // One connection for three downloads of two segments: most requests wait for it well past their
        // timeout. None of that waiting may count against maxRetries.
        var configuration = TransferClient.configuration(noProgressTimeout: .seconds(1))
        configuration.connectionPool = .init(idleTimeout: .seconds(10), concurrentHTTP1ConnectionsPerHostSoftLimit: 1)
        // AsyncHTTPClient bounds the wait for a pooled connection by the connect timeout.
        configuration.timeout.connect = .milliseconds(500)
        let client = HTTPClientHolder(configuration)
        defer { client.shutdown() }
        let content = RangeContent.generated(size: 2 << 20, seed: 42)
        try await Fixture.withServer(content: content, faults: [.throttle(bytesPerSecond: 2 << 20)]) { server in
            var waited = 0
            try await withThrowingTaskGroup(of: (DownloadOutcome, [DownloadEvent]).self) { group in
                for index in 0..<3 {
                    var request = fixture.request(server, name: "p\(index).bin", segments: 1)
                    request.maxRetries = 1
                    request.noProgressTimeout = .seconds(1)
                    let download = Download(request: request, client: client.client)
                    group.addTask { try await Fixture.runCollecting(download) }
                }
                for try await (outcome, events) in group {
                    #expect(outcome.result?.sha256 == content.sha256Hex())
                    waited +=
                        events.filter {
                            if case .retrying(_, _, let reason) = $0 {
                                reason.contains("free connection")
                            } else {
                                false
                            }
                        }.count
                }
            }
            #expect(waited > 0, "no request waited for the pool: the test did not exercise it")
        }
    }

    @Test(.needsRoot) func aFullDiskFailsWithWhatIsMissingAndKeepsWhatItHas() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let mount = fixture.path("small")
        try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
        let mounted = try BinaryRun.run(["-t", "tmpfs", "-o", "size=2m", "tmpfs", mount], executable: "/usr/bin/mount")
        try #require(mounted.status == 0, "mount: \(mounted.stderr)")
        defer { _ = try? BinaryRun.run([mount], executable: "/usr/bin/umount") }
        try await Fixture.withServer(content: Self.content) { server in
            // A known length larger than the free space: refused before the body, saying how much is missing.
            var request = fixture.request(server)
            request.destination = mount + "/known.bin"
            let (error, _) = await Self.failure(Download(request: request))
            #expect(error?.code == .tooLarge)
            #expect(error?.message.contains("free") == true, "\(String(describing: error))")
            #expect(server.bytesServed < 1 << 20)
            #expect(!Fixture.exists(request.destination + ".part"), "no partial is left of a refused download")
        }
        try await Fixture.withServer(content: Self.content, faults: [.noLength]) { server in
            // An unknown length that fills the disk: a file-system error, the process intact.
            var request = fixture.request(server)
            request.destination = mount + "/unknown.bin"
            let (error, _) = await Self.failure(Download(request: request))
            #expect(error?.code == .fileSystem, "\(String(describing: error))")
            #expect(!Fixture.exists(request.destination))
        }
    }
}

/// An HTTP client the test owns and shuts down.
final class HTTPClientHolder: Sendable {
    let client: HTTPClient
    init(_ configuration: HTTPClient.Configuration) {
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }
    func shutdown() { try? client.syncShutdown() }
}
