import Foundation
import RangeServer
import TestSupport
import Testing

/// `meterwise get` as docs/get.md describes it: exit codes, messages and resuming.
@Suite(.needsBinary) struct GetCommandTests {
    /// A fresh directory under /tmp (mode 0755: every user may traverse it), removed by `remove`.
    static func directory(_ name: String) throws -> URL {
        let url = URL(fileURLWithPath: "/tmp/mw-get-\(name)-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        chmod(url.path, 0o755)
        return url
    }

    /// get.md, exit 77: "the directory is not writable for you". A directory of root's (0755) as nobody.
    @Test(.needsOtherUser) func aDirectoryNotWritableForYouIsExit77() async throws {
        let base = try Self.directory("77")
        defer { try? FileManager.default.removeItem(at: base) }
        let server = try await RangeServer.start(content: .generated(size: 64 << 10, seed: 77))
        let output = base.appendingPathComponent("out.bin").path
        let run = try BinaryRun.run(["get", server.url("/out.bin"), "-o", output], prefix: SecurityTests.asNobody)
        try await server.shutdown()
        #expect(run.status == 77, "\(run.stdout)\(run.stderr)")
        #expect((run.stdout + run.stderr).contains("is not writable"), "\(run.stdout)\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: output + ".part"))
    }

    /// The same for a read-only mount, which root cannot write either.
    @Test(.needsRoot) func aReadOnlyMountIsExit77() async throws {
        let base = try Self.directory("ro")
        defer { try? FileManager.default.removeItem(at: base) }
        let mounted = try BinaryRun.run(
            ["-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", base.path], executable: "/usr/bin/mount")
        try #require(mounted.status == 0, "mount: \(mounted.stderr)")
        defer { _ = try? BinaryRun.run([base.path], executable: "/usr/bin/umount") }
        let server = try await RangeServer.start(content: .generated(size: 64 << 10, seed: 78))
        let run = try BinaryRun.run(["get", server.url("/out.bin"), "-o", base.appendingPathComponent("out.bin").path])
        try await server.shutdown()
        #expect(run.status == 77, "\(run.stdout)\(run.stderr)")
        #expect((run.stdout + run.stderr).contains("Read-only file system"), "\(run.stdout)\(run.stderr)")
    }

    /// checkpoint.md, `destination`: the whole path. Paused as `-o g` inside the directory, resumed as
    /// `-o /tmp/.../g` from elsewhere, the download goes on where it stopped.
    @Test func aCheckpointWrittenForARelativePathResumesFromTheWholePath() async throws {
        let base = try Self.directory("resume")
        defer { try? FileManager.default.removeItem(at: base) }
        let server = try await RangeServer.start(
            content: .generated(size: 8 << 20, seed: 79),
            faults: [.throttle(bytesPerSecond: 2 << 20)])
        let first = try LineCollector([
            "/bin/sh", "-c", "cd \"$1\" && exec \"$2\" get \"$3\" -o g --segments 1", "sh",
            base.path, RepoPaths.binary, server.url("/g"),
        ])
        let checkpoint = base.appendingPathComponent("g.part.checkpoint").path
        #expect(await eventually(timeout: .seconds(15)) { FileManager.default.fileExists(atPath: checkpoint) })
        first.stop()  // SIGTERM: paused, the checkpoint flushed
        try await server.waitUntilIdle()
        let stored = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: checkpoint)))
                as? [String: Any])
        let whole = try #require(realpath(base.path, nil).map { String(cString: $0) }) + "/g"
        #expect(stored["destination"] as? String == whole)
        server.setFaults([])
        let resumed = try BinaryRun.run([
            "get", server.url("/g"), "-o", base.appendingPathComponent("g").path, "--json",
        ])
        try await server.shutdown()
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let started = resumed.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }.first { $0["event"] as? String == "started" }
        #expect((started?["resumed_bytes"] as? Int ?? 0) > 0, "\(resumed.stdout)")
        #expect(!resumed.stderr.contains("starting from 0") && !resumed.stdout.contains("starting from 0"))
    }

    /// A port nothing listens on (bound, read, closed).
    static func closedPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        try #require(bound, "no port: \(errno)")
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Connection refused: retries say why, no line of zeros meanwhile, and giving up does not claim a
    /// checkpoint that was never written.
    @Test func refusedConnectionsGiveUpWithoutClaimingACheckpoint() throws {
        let base = try Self.directory("refused")
        defer { try? FileManager.default.removeItem(at: base) }
        let output = base.appendingPathComponent("x.bin").path
        let run = try BinaryRun.run([
            "get", "http://127.0.0.1:\(try Self.closedPort())/x.bin", "-o", output, "--retries", "4",
        ])
        #expect(run.status == 69, "\(run.stderr)")
        #expect(run.stderr.contains("Retry 4 in"), "\(run.stderr)")
        #expect(run.stderr.contains("Gave up after 4 retries"), "\(run.stderr)")
        #expect(run.stderr.contains("Nothing was received"), "\(run.stderr)")
        #expect(!run.stderr.contains("checkpoint is saved"), "\(run.stderr)")
        #expect(!run.stderr.contains("0 B, 0 B/s"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: output + ".part.checkpoint"))
    }

    /// A server without validators that is slower than --speed-limit: each retry restarts from 0, and
    /// giving up names the low-speed limit and the missing validators, not an object that changed.
    @Test func lowSpeedWithoutValidatorsNamesTheLimit() async throws {
        let base = try Self.directory("slow")
        defer { try? FileManager.default.removeItem(at: base) }
        let server = try await RangeServer.start(
            content: .generated(size: 1 << 20, seed: 80),
            faults: [.noValidators, .throttle(bytesPerSecond: 32 << 10)])
        let run = try BinaryRun.run([
            "get", server.url("/slow.bin"), "-o", base.appendingPathComponent("slow.bin").path,
            "--segments", "1", "--speed-limit", "512KiB", "--speed-time", "1",
        ])
        try await server.shutdown()
        #expect(run.status == 69, "\(run.stderr)")
        #expect(run.stderr.contains("below the low-speed limit"), "\(run.stderr)")
        #expect(run.stderr.contains("no validator"), "\(run.stderr)")
        #expect(!run.stderr.contains("keeps changing"), "\(run.stderr)")
    }

    /// A SIGINT in the first milliseconds, before the download has begun, pauses it as soon as it begins (it was
    /// swallowed: the download ran to its end and exited 0). Before the handler is installed the signal ends the
    /// process as its default does; either way it stops. The child starts with SIGINT's default action whatever
    /// this process inherited (a test run started with `&` by a script has SIGINT ignored, as its children would).
    @Test func aSignalAtTheVeryStartStillStops() async throws {
        let base = try Self.directory("early")
        defer { try? FileManager.default.removeItem(at: base) }
        let server = try await RangeServer.start(
            content: .generated(size: 16 << 20, seed: 83), faults: [.throttle(bytesPerSecond: 256 << 10)])
        for delay in [0, 2, 5, 10, 15, 20, 30, 50, 80] {
            let get = try LineCollector([
                "/usr/bin/env", "--default-signal=INT", RepoPaths.binary, "get", server.url("/e.bin"), "-o",
                base.appendingPathComponent("e\(delay).bin").path, "--json",
            ])
            try await Task.sleep(for: .milliseconds(delay))
            get.process.interrupt()
            let begun = ContinuousClock.now
            while get.process.isRunning, ContinuousClock.now - begun < .seconds(8) {
                try await Task.sleep(for: .milliseconds(20))
            }
            let running = get.process.isRunning
            get.stop()
            #expect(!running, "a SIGINT \(delay) ms after the start did not stop the download")
            if !running {
                let status = get.process.terminationStatus
                let bySignal = get.process.terminationReason == .uncaughtSignal
                #expect(bySignal || status == 130, "SIGINT at \(delay) ms: status \(status)")
            }
        }
        try await server.shutdown()
    }

    /// A signal ignored when `get` starts stays ignored, as shells and coreutils keep it: SIGINT for
    /// `meterwise get … &` in a script is meant for the script, not the download. SIGTERM still pauses it.
    /// Before, the SIGINT was dropped in the first milliseconds and paused the download after them.
    @Test func aSignalIgnoredAtTheStartStaysIgnored() async throws {
        let base = try Self.directory("ignored")
        defer { try? FileManager.default.removeItem(at: base) }
        let server = try await RangeServer.start(
            content: .generated(size: 16 << 20, seed: 84), faults: [.throttle(bytesPerSecond: 256 << 10)])
        let get = try LineCollector([
            "/usr/bin/env", "--ignore-signal=INT", RepoPaths.binary, "get", server.url("/i.bin"), "-o",
            base.appendingPathComponent("i.bin").path, "--json",
        ])
        let going = await get.waitForLine(timeout: .seconds(20)) { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                return false
            }
            return (object["bytes_done"] as? Int ?? 0) > 0
        }
        #expect(going != nil, "no progress")
        get.process.interrupt()
        try await Task.sleep(for: .seconds(1))
        #expect(get.process.isRunning, "an ignored SIGINT stopped the download")
        get.process.terminate()
        let paused = await get.waitForLine(timeout: .seconds(10)) { $0.contains("\"state\":\"paused\"") }
        let begun = ContinuousClock.now
        while get.process.isRunning, ContinuousClock.now - begun < .seconds(10) {
            try await Task.sleep(for: .milliseconds(20))
        }
        let running = get.process.isRunning
        get.stop()
        try await server.shutdown()
        #expect(paused != nil, "SIGTERM did not pause: \(get.received.map(\.line).suffix(3))")
        #expect(!running && get.process.terminationStatus == 143, "status \(get.process.terminationStatus)")
    }

    /// get.md: with --rate the kernel's queue fills ahead of the limit; a SIGINT writes what is here instead
    /// of throwing it away (before: `discarded_bytes` 1.6 MB with --rate 1MiB on loopback).
    @Test func aRateLimitedPauseKeepsWhatArrived() async throws {
        let base = try Self.directory("rate")
        defer { try? FileManager.default.removeItem(at: base) }
        let server = try await RangeServer.start(content: .generated(size: 32 << 20, seed: 82))
        let get = try LineCollector([
            RepoPaths.binary, "get", server.url("/r.bin"), "-o", base.appendingPathComponent("r.bin").path,
            "--rate", "1MiB", "--segments", "1", "--json",
        ])
        let going = await get.waitForLine(timeout: .seconds(20)) { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                return false
            }
            return (object["bytes_done"] as? Int ?? 0) > 1 << 20
        }
        #expect(going != nil, "no progress past 1 MiB")
        get.process.interrupt()
        let paused = await get.waitForLine(timeout: .seconds(10)) { $0.contains("\"state\":\"paused\"") }
        get.stop()
        try await server.shutdown()
        let line = try #require(paused?.line, "no paused line")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect((object["discarded_bytes"] as? Int ?? .max) < 64 << 10, "\(line)")
        #expect((object["bytes_done"] as? Int ?? 0) > 1 << 20, "\(line)")
    }
}
