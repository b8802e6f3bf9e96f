import Foundation
import TestSupport
import Testing

/// The event stream's lifecycle: a quiet stream carries keep-alives and ends no client, a client that hears
/// nothing for three intervals counts the daemon as lost (`run` then holds its command and reconnects), and
/// SIGTERM ends every stream at once.
@Suite(.serialized) struct EventStreamTests {
    static func directory() throws -> URL {
        let directory = URL(fileURLWithPath: "/tmp/mwe-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// A program holding `GET /v1/events` open with curl, its output in a file.
    final class CurlStream: Sendable {
        let process: Process
        let output: String

        init(socket: String, output: String, headers: Bool = false) throws {
            self.output = output
            try #require(FileManager.default.createFile(atPath: output, contents: nil))
            process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            process.arguments =
                ["-sN", "--unix-socket", socket] + (headers ? ["-D", "-"] : []) + ["http://localhost/v1/events"]
            process.standardOutput = FileHandle(forWritingAtPath: output)
            process.standardError = FileHandle.nullDevice
            try process.run()
        }

        var text: String { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }

        /// SIGKILL: a child of the test process inherits its blocked signals, SIGTERM included.
        func stop() {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }

    @Test func aQuietStreamCarriesKeepalivesAndEndsNoClient() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let scenario = try DaemonProcess.scenario(in: directory, DaemonProcess.wifiForAnHour)
        let daemon = try DaemonProcess(directory: directory, scenario: scenario, extra: ["--keepalive", "200ms"])
        defer { daemon.kill(SIGTERM) }
        #expect(await daemon.waitUntilListening())
        let stream = try CurlStream(
            socket: daemon.socket, output: directory.appendingPathComponent("events").path, headers: true)
        defer { stream.stop() }
        let watch = try LineCollector([RepoPaths.binary, "watch", "--json", "--socket", daemon.socket])
        defer {
            kill(watch.process.processIdentifier, SIGKILL)
            watch.stop()
        }
        // Nothing happens on this scenario after its first step: 3 s is fifteen intervals of quiet.
        #expect(
            await eventually(timeout: .seconds(3)) { stream.text.components(separatedBy: "\"keepalive\"").count > 10 },
            "\(stream.text)")
        #expect(stream.text.lowercased().contains("meterwise-keepalive: 0.200"), "\(stream.text)")
        #expect(watch.process.isRunning, "watch ended on a quiet stream")
        #expect(watch.received.count == 1, "watch printed more than the links event: \(watch.received)")
        #expect(!watch.received.contains { $0.line.contains("keepalive") })
        #expect(stream.process.isRunning)
    }

    @Test func runHoldsItsCommandWhileTheDaemonIsLostAndFollowsItAgain() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let scenario = try DaemonProcess.scenario(in: directory, DaemonProcess.wifiForAnHour)
        let daemon = try DaemonProcess(directory: directory, scenario: scenario, extra: ["--keepalive", "200ms"])
        defer {
            kill(daemon.process.processIdentifier, SIGCONT)
            daemon.kill(SIGTERM)
        }
        #expect(await daemon.waitUntilListening())
        let marker = directory.appendingPathComponent("pid").path
        let run = Process()
        run.executableURL = URL(fileURLWithPath: RepoPaths.binary)
        run.arguments = [
            "run", "--tag", "script", "--socket", daemon.socket, "--", "/bin/sh", "-c",
            "echo $$ > '\(marker)'; exec sleep 60",
        ]
        let log = directory.appendingPathComponent("run.log").path
        try #require(FileManager.default.createFile(atPath: log, contents: nil))
        run.standardError = FileHandle(forWritingAtPath: log)
        run.standardOutput = FileHandle.nullDevice
        try run.run()
        defer {
            if run.isRunning {
                kill(run.processIdentifier, SIGKILL)
                run.waitUntilExit()
            }
        }
        func child() -> Int32? {
            (try? String(contentsOfFile: marker, encoding: .utf8)).flatMap {
                Int32($0.trimmingCharacters(in: .whitespacesAndNewlines))
            }
        }
        func stderr() -> String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }
        #expect(await eventually { child() != nil }, "the command did not start: \(stderr())")
        let pid = try #require(child())
        defer {
            kill(-pid, SIGCONT)
            kill(-pid, SIGKILL)
        }
        // Quiet for ten keep-alive intervals, counted on a stream of our own (`run` may count the daemon as
        // lost after three silent ones): still followed, still running.
        let stream = try CurlStream(socket: daemon.socket, output: directory.appendingPathComponent("events").path)
        defer { stream.stop() }
        let keepalives = { stream.text.components(separatedBy: "\"keepalive\"").count - 1 }
        #expect(await eventually(timeout: .seconds(20)) { keepalives() >= 10 }, "no ten keep-alives: \(stream.text)")
        #expect(run.isRunning && RunCommandTests.state(pid) != "T", "\(stderr())")
        #expect(!stderr().contains("lost the daemon"), "\(stderr())")

        // A stuck daemon (stopped): no keep-alive for three intervals, and the command is held.
        kill(daemon.process.processIdentifier, SIGSTOP)
        #expect(
            await eventually(timeout: .seconds(2)) { RunCommandTests.state(pid) == "T" },
            "the command ran on while the daemon was lost: \(stderr())")
        #expect(stderr().contains("lost the daemon"), "\(stderr())")
        // `run` asks the stuck daemon again (0.25 s after the loss): the kernel holds that connection in the
        // listener's queue, unanswered. Still held.
        let daemonPID = daemon.process.processIdentifier
        #expect(
            await eventually(timeout: .seconds(10)) { Self.pendingConnections(daemonPID) >= 1 },
            "run did not ask the daemon again: \(stderr())")
        #expect(RunCommandTests.state(pid) == "T")

        // Back: the stream is opened again and its answer (run) continues the command.
        kill(daemon.process.processIdentifier, SIGCONT)
        #expect(
            await eventually(timeout: .seconds(10)) { RunCommandTests.state(pid) != "T" },
            "the command was not continued when the daemon answered again: \(stderr())")
        #expect(await eventually { stderr().contains("the daemon answers again") }, "\(stderr())")
        #expect(run.isRunning)
        // The fence: `run` handles one thing at a time and says each continue, so anything during the loss
        // that continued the command would be said between the loss and the daemon's answer.
        let said = stderr().split(separator: "\n").map(String.init)
        let lost = try #require(said.firstIndex { $0.contains("lost the daemon") })
        let back = try #require(said.firstIndex { $0.contains("the daemon answers again") })
        #expect(lost < back && !said[lost..<back].contains { $0.contains("continued") }, "\(stderr())")
    }

    /// Connections queued on the Unix listening sockets of process `pid`, not yet accepted (ss's Recv-Q; the
    /// daemon binds its socket under a temporary name and renames it, so ss knows it by that name, not ours).
    static func pendingConnections(_ pid: Int32) -> Int {
        guard let listing = try? BinaryRun.run(["-xlpH"], executable: "/usr/bin/ss") else { return 0 }
        return listing.stdout.split(separator: "\n").filter { $0.contains("pid=\(pid),") }.reduce(0) { total, line in
            let fields = line.split(whereSeparator: \.isWhitespace)
            return total + (fields.count > 2 ? Int(fields[2]) ?? 0 : 0)
        }
    }

    @Test func sigtermExitsWithin2sWith64StreamsOpen() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let scenario = try DaemonProcess.scenario(in: directory, DaemonProcess.wifiForAnHour)
        let daemon = try DaemonProcess(directory: directory, scenario: scenario)
        defer { if daemon.process.isRunning { daemon.kill(SIGKILL) } }
        #expect(await daemon.waitUntilListening())
        var streams: [CurlStream] = []
        defer { for stream in streams { stream.stop() } }
        for index in 0..<63 {
            streams.append(
                try CurlStream(socket: daemon.socket, output: directory.appendingPathComponent("s\(index)").path))
        }
        // And a watcher, as `meterwise watch` holds one.
        let watch = try LineCollector([RepoPaths.binary, "watch", "--json", "--socket", daemon.socket])
        defer {
            kill(watch.process.processIdentifier, SIGKILL)
            watch.stop()
        }
        #expect(
            await eventually(timeout: .seconds(20)) { streams.allSatisfy { $0.text.contains("\"links\"") } },
            "not every stream started")
        #expect(await watch.waitForLine { $0.contains("\"links\"") } != nil)

        let started = ContinuousClock.now
        kill(daemon.process.processIdentifier, SIGTERM)
        let exited = await eventually(timeout: .seconds(2)) { !daemon.process.isRunning }
        let took = ContinuousClock.now - started
        #expect(exited, "the daemon was alive 2 s after SIGTERM with 64 streams open")
        if !exited { return }
        #expect(daemon.process.terminationStatus == 0)
        #expect(took < .seconds(2), "SIGTERM took \(took)")
        // Every client sees its stream end.
        #expect(
            await eventually(timeout: .seconds(2)) {
                streams.allSatisfy { !$0.process.isRunning } && !watch.process.isRunning
            },
            "a client still waits on a stream of a stopped daemon")
        #expect(!FileManager.default.fileExists(atPath: daemon.socket), "the socket was left behind")
    }
}
