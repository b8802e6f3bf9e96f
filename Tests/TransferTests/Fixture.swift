import Crypto
import Foundation
import RangeServer
import Transfer

/// A temporary directory and helpers shared by the integration tests.
struct Fixture {
    static let mib: Int64 = 1 << 20
    let directory: String

    /// A directory under `base` (default: the temporary directory).
    init(_ name: String = #function, base: String? = nil) {
        let base = base ?? FileManager.default.temporaryDirectory.path
        directory =
            "\(base)/meterwise-transfer-\(name.filter { $0.isLetter || $0.isNumber })-\(UInt32.random(in: 0...UInt32.max))"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    func path(_ name: String = "out.bin") -> String { "\(directory)/\(name)" }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }

    /// A request with 1 MiB chunks and checkpoints, so small objects still have many chunks, and the
    /// whole-file sha256 computed (the result's `sha256` is what most tests check).
    func request(_ server: RangeServer, name: String = "out.bin", segments: Int? = nil) -> DownloadRequest {
        var r = DownloadRequest(url: server.url(), destination: path(name), segments: segments)
        r.computeSHA256 = true
        r.chunkSize = Self.mib
        r.checkpointEveryBytes = Self.mib
        r.maxRetries = 6
        return r
    }

    static func sha256(file path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        var hasher = SHA256()
        while let data = try? handle.read(upToCount: 1 << 20), !data.isEmpty { hasher.update(data: data) }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }

    static func sha256(bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }

    static func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    /// Runs `download` and pauses it once `bytesDone` reaches `threshold`; returns the outcome and events.
    static func runPausing(_ download: Download, at threshold: Int64) async throws -> (DownloadOutcome, [DownloadEvent])
    {
        async let outcome = download.run()
        var events: [DownloadEvent] = []
        for await event in download.events {
            events.append(event)
            if case .progress(let p) = event, p.bytesDone >= threshold {
                await download.pause()
            }
            if case .paused = event { break }
            if case .completed = event { break }
            if case .failed = event { break }
        }
        return (try await outcome, events)
    }

    /// Runs `download` to its end, collecting the events.
    static func runCollecting(_ download: Download) async throws -> (DownloadOutcome, [DownloadEvent]) {
        let (outcome, events) = await runCollectingResult(download)
        return (try outcome.get(), events)
    }

    /// As `runCollecting`, with a failure returned beside the events instead of thrown.
    static func runCollectingResult(_ download: Download) async -> (
        Result<DownloadOutcome, TransferError>, [DownloadEvent]
    ) {
        async let events = collect(download.events)
        let outcome: Result<DownloadOutcome, TransferError>
        do throws(TransferError) {
            outcome = .success(try await download.run())
        } catch {
            outcome = .failure(error)
        }
        return (outcome, await events)
    }

    static func collect(_ stream: AsyncStream<DownloadEvent>) async -> [DownloadEvent] {
        var events: [DownloadEvent] = []
        for await event in stream {
            events.append(event)
            switch event {
            case .completed, .failed, .paused, .cancelled: return events
            default: continue
            }
        }
        return events
    }

    /// Starts a range server, runs `body`, shuts the server down.
    static func withServer<T>(
        content: RangeContent, faults: [RangeFault] = [], _ body: (RangeServer) async throws -> T
    ) async throws -> T {
        let server = try await RangeServer.start(content: content, faults: faults)
        do {
            let value = try await body(server)
            try await server.shutdown()
            return value
        } catch {
            try? await server.shutdown()
            throw error
        }
    }
}

extension Array where Element == DownloadEvent {
    var restarts: Int { filter { if case .restarted = $0 { return true } else { return false } }.count }
    var retries: [Duration] {
        compactMap { if case .retrying(_, let delay, _) = $0 { return delay } else { return nil } }
    }
}

extension DownloadOutcome {
    var result: DownloadResult? {
        if case .completed(let r) = self { return r }
        return nil
    }
}
