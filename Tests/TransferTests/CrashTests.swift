import Foundation
import TestSupport
import Testing

@testable import Transfer

/// SIGKILLs the built `meterwise get` at random moments and resumes it each time.
@Suite(.serialized)
struct CrashTests {
    /// The debug binary built by `swift build` (tests run after it).
    static var binary: String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
        return root + "/.build/debug/meterwise"
    }

    static func launch(_ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    @Test func killedTenTimesThenResumedGivesTheRightFile() async throws {
        try await killTenTimes(faults: [])
    }

    /// Issue 30, case 3, with the built binary: a server that sends another ETag with every answer for the same
    /// bytes, killed ten times. Before, every run started from 0 again and it never converged; now each kill
    /// loses no more than with an honest server.
    @Test func killedTenTimesOnAServerWhoseETagChangesEveryAnswer() async throws {
        try await killTenTimes(faults: [.changingETag(honoursIfMatch: false, lastModified: true)])
    }

    func killTenTimes(faults: [RangeFault]) async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: Self.binary),
            "\(Self.binary) is missing: run `swift build` before `swift test`"
        )
        let fixture = Fixture()
        defer { fixture.remove() }
        let segments = 4
        let interval: Int64 = 4 << 20  // the default checkpoint interval, for the whole download
        let content = RangeContent.generated(size: 96 << 20, seed: 21)
        // 2 MiB/s per connection, 8 MiB/s in all: about 12 s, so ten kills land before the end, and a second
        // moves more than the 4 MiB bound (issue 30: a kill at 1.5 s once left no checkpoint at all).
        try await Fixture.withServer(content: content, faults: faults + [.throttle(bytesPerSecond: 2 << 20)]) {
            server in
            let output = fixture.path("out.bin")
            let arguments = ["get", server.url(), "-o", output, "--segments", "\(segments)", "--json"]
            var kills = 0
            var worstLoss: Int64 = 0
            var progressBefore: Int64 = 0
            var losses: [Int64] = []
            // The kill points are random; the seed is printed, and METERWISE_CRASH_SEED=N replays them.
            let seed = SplitMix.seed(from: "METERWISE_CRASH_SEED")
            print("crash test: kill points from seed \(seed) (METERWISE_CRASH_SEED=\(seed) replays them)")
            var random = SplitMix(seed: seed)
            while kills < 10 {
                let served = server.bytesServed
                let process = try Self.launch(arguments)
                try await Task.sleep(for: .milliseconds(Int.random(in: 300...1800, using: &random)))
                guard process.isRunning else { break }
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                kills += 1
                let saved = Self.savedBytes(output + ".part.checkpoint")
                // Bytes sent in this run that the checkpoint does not hold must be fetched again.
                let sent = server.bytesServed - served
                let loss = sent - max(0, saved - progressBefore)
                worstLoss = max(worstLoss, loss)
                losses.append(loss)
                progressBefore = saved
            }
            #expect(kills >= 10)
            let last = try Self.launch(arguments)
            last.waitUntilExit()
            #expect(last.terminationStatus == 0)
            #expect(Fixture.sha256(file: output) == content.sha256Hex())
            let refetched = server.bytesServed - content.size
            print("crash test: \(kills) kills, bytes fetched twice per kill: \(losses), in all \(refetched)")
            // At most one checkpoint interval (1 s or 4 MiB, whichever is less: docs/checkpoint.md) from the very
            // first byte, plus what was in flight when the process died: the writer queue (2 MiB) and about
            // 1 MiB per connection in socket buffers.
            let bound = interval + Int64(segments) * (1 << 20) + (2 << 20)
            #expect(worstLoss <= bound, "worst loss per kill \(worstLoss) (seed \(seed))")
            #expect(refetched <= Int64(kills) * bound)
        }
    }

    static func savedBytes(_ checkpointPath: String) -> Int64 {
        guard let data = FileManager.default.contents(atPath: checkpointPath),
            let checkpoint = try? Checkpoint.decode(data)
        else { return 0 }
        return checkpoint.bytesDone
    }
}
