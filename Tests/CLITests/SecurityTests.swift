import Foundation
import RangeServer
import TestSupport
import Testing

/// The daemon as a root service other users talk to, and `get` in directories other users share: each
/// test is an attack a local user can make (docs/security.md lists which test holds which line).
@Suite(.serialized, .needsBinary, .needsOtherUser) struct SecurityTests {
    static let asNobody = ["/usr/sbin/runuser", "-u", "nobody", "--"]
    static let nobody = getpwnam("nobody")!.pointee.pw_uid

    /// A directory under /tmp that nobody may traverse (0755), with `private` (root only, 0700) and
    /// `shared` (everyone, sticky 1777) inside.
    static func directories() throws -> (base: URL, root: URL, shared: URL) {
        let base = URL(fileURLWithPath: "/tmp/mw-sec-\(UInt32.random(in: 0...UInt32.max))")
        let root = base.appendingPathComponent("private")
        let shared = base.appendingPathComponent("shared")
        for (url, mode) in [(base, 0o755), (root, 0o700), (shared, 0o1777)] {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            chmod(url.path, mode_t(mode))
        }
        return (base, root, shared)
    }

    static func owner(_ path: String) -> uid_t? {
        var st = stat()
        return lstat(path, &st) == 0 ? st.st_uid : nil
    }

    static func sha256(_ path: String) throws -> String {
        let run = try BinaryRun.run([path], executable: "/usr/bin/sha256sum")
        return String(run.stdout.prefix(64))
    }

    @Test func otherUserWritesOnlyWhereTheyMayAndSeesOnlyTheirJobs() async throws {
        let (base, rootOnly, shared) = try Self.directories()
        defer { try? FileManager.default.removeItem(at: base) }
        let server = try await RangeServer.start(content: .generated(size: 2 << 20, seed: 21))
        let scenario = try DaemonProcess.scenario(in: base, DaemonProcess.wifiForAnHour)
        let daemon = try DaemonProcess(directory: base, scenario: scenario, extra: ["--group", "nogroup"])
        defer { daemon.kill(SIGTERM) }
        #expect(await daemon.waitUntilListening())

        let rootJob = try daemon.cli([
            "add", server.url("/secret?X-Amz-Signature=s3cr3t"), "-o", rootOnly.appendingPathComponent("mine").path,
        ])
        #expect(rootJob.status == 0, "\(rootJob.stderr)")

        // Into a root-only directory: refused, with the reason, and nothing created there.
        let evil = try daemon.cliAsNobody([
            "add", server.url("/evil"), "-o", rootOnly.appendingPathComponent("evil").path,
        ])
        #expect(evil.status != 0)
        #expect(evil.stderr.contains("uid \(Self.nobody)"), "\(evil.stderr)")
        #expect(!FileManager.default.fileExists(atPath: rootOnly.appendingPathComponent("evil").path))
        #expect(!FileManager.default.fileExists(atPath: rootOnly.appendingPathComponent("evil.part").path))
        // `..` is the kernel's, with nobody's rights: no lexical shortcut through a directory they cannot search.
        let around = try daemon.cliAsNobody(["add", server.url("/a"), "-o", rootOnly.path + "/../shared/around.bin"])
        #expect(around.status != 0, "\(around.stdout)")

        // Root's jobs are invisible to nobody: not in list, not by id, not in the API.
        let list = try daemon.cliAsNobody(["list", "--json"])
        #expect(list.status == 0, "\(list.stderr)")
        #expect(!list.stdout.contains("s3cr3t") && !list.stdout.contains("mine"), "\(list.stdout)")
        let rootID = try #require(try daemon.jobs().first.flatMap { ($0["job"] as? [String: Any])?["id"] as? String })
        let status = try daemon.cliAsNobody(["status", rootID])
        #expect(status.status != 0 && !status.stdout.contains("s3cr3t"))
        let cancel = try daemon.cliAsNobody(["cancel", rootID])
        #expect(cancel.status != 0)

        // Where nobody may write, the job runs and its file is nobody's, not root's.
        let own = shared.appendingPathComponent("own.bin").path
        let add = try daemon.cliAsNobody([
            "add", server.url("/own.bin"), "-o", own, "--sha256", server.content.sha256Hex(),
        ])
        #expect(add.status == 0, "\(add.stderr)")
        #expect(await eventually(timeout: .seconds(20)) { FileManager.default.fileExists(atPath: own) })
        #expect(Self.owner(own) == Self.nobody)
        #expect(try Self.sha256(own) == server.content.sha256Hex())
        // nobody sees that job, root sees both.
        let mine = try daemon.cliAsNobody(["list", "--json"])
        #expect(mine.stdout.contains("own.bin"))
        #expect(try daemon.jobs().count == 2)

        // Nothing in the state directory is readable by others; the directory itself is private.
        let state = base.appendingPathComponent("state").path
        for name in try FileManager.default.contentsOfDirectory(atPath: state) {
            var st = stat()
            #expect(
                stat(state + "/" + name, &st) == 0 && st.st_mode & 0o077 == 0,
                "\(name) is \(String(st.st_mode, radix: 8))")
        }
        try await server.shutdown()
    }

    @Test func plantedSymlinksAreNeverFollowed() async throws {
        let (base, _, shared) = try Self.directories()
        defer { try? FileManager.default.removeItem(at: base) }
        let server = try await RangeServer.start(content: .generated(size: 12 << 20, seed: 22))
        let target = base.appendingPathComponent("target").path
        try "precious\n".write(toFile: target, atomically: false, encoding: .utf8)
        for (name, planted) in [
            ("a.bin", "a.bin.part"), ("b.bin", "b.bin.part.checkpoint.tmp"), ("c.bin", "c.bin.part.checkpoint"),
        ] {
            let output = shared.appendingPathComponent(name).path
            try FileManager.default.createSymbolicLink(
                atPath: shared.appendingPathComponent(planted).path, withDestinationPath: target)
            let get = try BinaryRun.run(["get", server.url("/\(name)"), "-o", output, "--segments", "1"])
            #expect(get.status == 0, "\(planted): \(get.stderr)")
            #expect(try String(contentsOfFile: target, encoding: .utf8) == "precious\n", "\(planted) was followed")
            #expect(try Self.sha256(output) == server.content.sha256Hex(), "\(planted)")
        }
        try await server.shutdown()
    }

    @Test func forgedPartialFromAnotherUserIsDiscarded() async throws {
        let (base, _, shared) = try Self.directories()
        defer { try? FileManager.default.removeItem(at: base) }
        let server = try await RangeServer.start(
            content: .generated(size: 8 << 20, seed: 23),
            faults: [.throttle(bytesPerSecond: 2 << 20)])
        let output = shared.appendingPathComponent("tool.bin").path
        // A genuine checkpoint to forge from (validators, layout), then the attacker's version of both files.
        let first = try LineCollector([
            RepoPaths.binary, "get", server.url("/tool.bin"), "-o", output, "--segments", "1",
        ])
        #expect(
            await eventually(timeout: .seconds(15)) {
                FileManager.default.fileExists(atPath: output + ".part.checkpoint")
            })
        first.stop()
        try await server.waitUntilIdle()
        let script = Data("#!/bin/sh\necho pwned\n".utf8)
        var checkpoint = try #require(
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: output + ".part.checkpoint"))) as? [String: Any])
        let digest = try BinaryRun.run(["-c", "printf '#!/bin/sh\\necho pwned\\n' | sha256sum"], executable: "/bin/sh")
            .stdout.prefix(64)
        checkpoint["pieces"] = [["offset": 0, "length": script.count, "sha256": String(digest)]]
        for path in [output + ".part", output + ".part.checkpoint"] {
            try? FileManager.default.removeItem(atPath: path)
        }
        let forged = try JSONSerialization.data(withJSONObject: checkpoint)
        let plant = base.appendingPathComponent("plant").path
        try forged.write(to: URL(fileURLWithPath: plant + ".checkpoint"))
        try script.write(to: URL(fileURLWithPath: plant + ".part"))
        for path in [plant + ".part", plant + ".checkpoint"] { chmod(path, 0o644) }
        for (from, to) in [(plant + ".part", output + ".part"), (plant + ".checkpoint", output + ".part.checkpoint")] {
            let copy = try BinaryRun.run(["-u", "nobody", "--", "/bin/cp", from, to], executable: "/usr/sbin/runuser")
            #expect(copy.status == 0, "\(copy.stderr)")
            #expect(Self.owner(to) == Self.nobody)
        }
        server.setFaults([])
        let get = try BinaryRun.run(["get", server.url("/tool.bin"), "-o", output])
        #expect(get.status == 0, "\(get.stderr)")
        #expect(get.stderr.contains("Not using the partial file"), "\(get.stderr)")
        #expect(try Self.sha256(output) == server.content.sha256Hex())
        #expect(Self.owner(output) == 0)
        try await server.shutdown()
    }

    @Test func twoGetsToOneOutputOneWriter() async throws {
        let (base, _, shared) = try Self.directories()
        defer { try? FileManager.default.removeItem(at: base) }
        let server = try await RangeServer.start(
            content: .generated(size: 6 << 20, seed: 24),
            faults: [.throttle(bytesPerSecond: 3 << 20)])
        let output = shared.appendingPathComponent("same.bin").path
        let first = try LineCollector([RepoPaths.binary, "get", server.url("/same.bin"), "-o", output, "--json"])
        #expect(await eventually(timeout: .seconds(10)) { FileManager.default.fileExists(atPath: output + ".part") })
        let started = Date()
        let second = try BinaryRun.run(["get", server.url("/same.bin"), "-o", output])
        #expect(second.status == 75, "\(second.stderr)")
        #expect(second.stderr.contains("Another download is writing"), "\(second.stderr)")
        #expect(Date().timeIntervalSince(started) < 5, "the second get did not exit at once")
        first.process.waitUntilExit()
        #expect(first.process.terminationStatus == 0)
        #expect(try Self.sha256(output) == server.content.sha256Hex())
        try await server.shutdown()
    }

    @Test func aSecondDaemonOnABusyStateDirectoryOrSocketExitsAtOnce() async throws {
        let (base, _, _) = try Self.directories()
        defer { try? FileManager.default.removeItem(at: base) }
        let scenario = try DaemonProcess.scenario(in: base, DaemonProcess.wifiForAnHour)
        let daemon = try DaemonProcess(directory: base, scenario: scenario)
        defer { daemon.kill(SIGTERM) }
        #expect(await daemon.waitUntilListening())
        let common = [
            "daemon", "--links", "scenario", "--scenario", scenario, "--policy",
            RepoPaths.file("policies/default.yaml"),
        ]
        let sameState = try BinaryRun.run(
            common + [
                "--state", base.appendingPathComponent("state").path,
                "--socket", base.appendingPathComponent("other.sock").path,
            ])
        #expect(sameState.status != 0)
        #expect(sameState.stderr.contains("another meterwise daemon"), "\(sameState.stderr)")
        let sameSocket = try BinaryRun.run(
            common + [
                "--state", base.appendingPathComponent("state2").path,
                "--socket", daemon.socket,
            ])
        #expect(sameSocket.status != 0)
        #expect(sameSocket.stderr.contains("another daemon listens"), "\(sameSocket.stderr)")
        // The first keeps serving on its socket.
        #expect(try daemon.cli(["list"]).status == 0)
        #expect(FileManager.default.fileExists(atPath: daemon.socket))
    }

    @Test func aSocketGroupThatCannotBeAppliedFailsLoudly() async throws {
        let (base, _, shared) = try Self.directories()
        defer { try? FileManager.default.removeItem(at: base) }
        let scenario = try DaemonProcess.scenario(in: shared, DaemonProcess.wifiForAnHour)
        chmod(scenario, 0o644)
        let run = try BinaryRun.run(
            [
                "daemon", "--links", "scenario", "--scenario", scenario, "--policy",
                RepoPaths.file("policies/default.yaml"),
                "--state", shared.appendingPathComponent("state").path, "--socket",
                shared.appendingPathComponent("s.sock").path,
                "--group", "root",
            ], prefix: Self.asNobody)
        #expect(run.status != 0)
        #expect(run.stderr.contains("cannot give the socket to group root"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: shared.appendingPathComponent("s.sock").path))
    }

    @Test func idleConnectionsDoNotLockOutOthers() async throws {
        let (base, _, shared) = try Self.directories()
        defer { try? FileManager.default.removeItem(at: base) }
        let server = try await RangeServer.start(content: .generated(size: 64 << 10, seed: 25))
        let scenario = try DaemonProcess.scenario(in: base, DaemonProcess.wifiForAnHour)
        let daemon = try DaemonProcess(directory: base, scenario: scenario, extra: ["--group", "nogroup"])
        defer { daemon.kill(SIGTERM) }
        #expect(await daemon.waitUntilListening())
        // nobody opens 300 connections and sends nothing (a shell holding them open).
        let hold = try LineCollector(
            Self.asNobody + [
                "/usr/bin/python3", "-c",
                """
                import socket, sys, time
                held = []
                for i in range(300):
                    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); held.append(s)
                print("held", flush=True); time.sleep(60)
                """, daemon.socket,
            ])
        defer { hold.stop() }
        #expect(await hold.waitForLine { $0 == "held" } != nil, "the idle connections were not all accepted")
        // The held connections end; then event streams that clients closed are released at once, even on a
        // quiet daemon: 80 of them must not use up nobody's connections.
        hold.stop()
        #expect(
            await eventually(timeout: .seconds(10)) {
                (try? BinaryRun.run(["list", "--socket", daemon.socket], prefix: Self.asNobody).status) == 0
            })
        for _ in 0..<80 {
            _ = try BinaryRun.run(
                ["-s", "-m", "0.2", "-N", "--unix-socket", daemon.socket, "http://localhost/v1/events"],
                executable: "/usr/bin/curl", prefix: Self.asNobody)
        }
        let after = try BinaryRun.run(["list", "--socket", daemon.socket], prefix: Self.asNobody)
        #expect(after.status == 0, "nobody is locked out after closing event streams: \(after.stderr)")
        let started = Date()
        let add = try daemon.cli(["add", server.url("/x.bin"), "-o", shared.appendingPathComponent("x.bin").path])
        #expect(add.status == 0, "\(add.stderr)")
        #expect(Date().timeIntervalSince(started) < 5)
        try await server.shutdown()
    }

    @Test func credentialsInURLsAreNeverPrinted() async throws {
        let (base, _, shared) = try Self.directories()
        defer { try? FileManager.default.removeItem(at: base) }
        let server = try await RangeServer.start(content: .generated(size: 256 << 10, seed: 26))
        let secretURL = server.url("/c.bin").replacingOccurrences(of: "http://", with: "http://alice:s3cr3t@")
        let get = try BinaryRun.run(["get", secretURL, "-o", shared.appendingPathComponent("c.bin").path])
        #expect(get.status == 0, "\(get.stderr)")
        #expect(!(get.stdout + get.stderr).contains("s3cr3t"), "\(get.stdout)\(get.stderr)")
        let json = try BinaryRun.run(["get", secretURL, "-o", shared.appendingPathComponent("d.bin").path, "--json"])
        #expect(json.status == 0 && !(json.stdout + json.stderr).contains("s3cr3t"), "\(json.stdout)")

        let scenario = try DaemonProcess.scenario(in: base, DaemonProcess.wifiForAnHour)
        let daemon = try DaemonProcess(directory: base, scenario: scenario)
        defer { daemon.kill(SIGTERM) }
        #expect(await daemon.waitUntilListening())
        let add = try daemon.cli(["add", secretURL, "-o", shared.appendingPathComponent("e.bin").path])
        #expect(add.status == 0 && !(add.stdout + add.stderr).contains("s3cr3t"), "\(add.stdout)\(add.stderr)")
        let list = try daemon.cli(["list", "--json"])
        #expect(list.stdout.contains("<redacted>@") && !list.stdout.contains("s3cr3t"), "\(list.stdout)")
        try await server.shutdown()
    }

    /// Root without capabilities (as under an empty CapabilityBoundingSet=) cannot act as another user: it
    /// refuses their jobs with the reason instead of writing as itself, and a group it cannot apply fails loudly.
    @Test func withoutCapabilitiesTheDaemonRefusesRatherThanWritingAsItself() async throws {
        let (base, _, shared) = try Self.directories()
        defer { try? FileManager.default.removeItem(at: base) }
        let server = try await RangeServer.start(content: .generated(size: 64 << 10, seed: 27))
        let scenario = try DaemonProcess.scenario(in: base, DaemonProcess.wifiForAnHour)
        let common = [
            "daemon", "--links", "scenario", "--scenario", scenario, "--policy",
            RepoPaths.file("policies/default.yaml"),
            "--state", base.appendingPathComponent("state").path,
        ]
        let noCaps = ["/usr/bin/setpriv", "--bounding-set=-all", "--"]
        let loud = try BinaryRun.run(
            common + ["--socket", base.appendingPathComponent("a.sock").path, "--group", "nogroup"],
            prefix: noCaps)
        #expect(loud.status != 0)
        #expect(loud.stderr.contains("cannot give the socket to group nogroup"), "\(loud.stderr)")

        // With nogroup as a supplementary group the socket's group holds; nobody can connect.
        let daemon = try LineCollector(
            ["/usr/bin/setpriv", "--groups", "65534", "--bounding-set=-all", "--", RepoPaths.binary]
                + common + ["--socket", base.appendingPathComponent("b.sock").path, "--group", "nogroup"])
        defer { daemon.stop() }
        let socket = base.appendingPathComponent("b.sock").path
        #expect(await eventually(timeout: .seconds(20)) { FileManager.default.fileExists(atPath: socket) })
        let add = try BinaryRun.run(
            [
                "add", server.url("/n.bin"), "-o", shared.appendingPathComponent("n.bin").path,
                "--socket", socket,
            ], prefix: Self.asNobody)
        #expect(add.status != 0)
        #expect(add.stderr.contains("cannot act as uid \(Self.nobody)"), "\(add.stderr)")
        #expect(!FileManager.default.fileExists(atPath: shared.appendingPathComponent("n.bin").path))
        try await server.shutdown()
    }
}
