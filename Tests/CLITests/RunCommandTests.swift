import Foundation
import Lab
import Testing
import TestSupport

/// `meterwise run -- COMMAND` in namespaces with wlan0 and wwan0: the command starts on Wi-Fi, is stopped
/// (SIGSTOP) within a second of the primary moving to the metered wwan0, continues when wlan0 returns,
/// and its exit status is meterwise's.
@Suite(.serialized) struct RunCommandTests {
    /// The state letter of `pid` in /proc (R, S, T...), or nil once it is gone.
    static func state(_ pid: Int32) -> Character? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        return stat[stat.index(close, offsetBy: 2)]
    }

    @Test(.needsKernel) func theCommandIsStoppedOnCellularAndContinuedOnWifi() async throws {
        let uplinks = try VethUplinks.create(prefix: "mwrun")
        defer { uplinks.delete() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = ["netns", "exec", uplinks.device.name, RepoPaths.binary, "run",
                             "--policy", RepoPaths.file("policies/default.yaml"), "--", "sh", "-c", "sleep 2; exit 7"]
        process.standardOutput = FileHandle.nullDevice
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("mwrun-\(UUID().uuidString).log").path
        try #require(FileManager.default.createFile(atPath: log, contents: nil))
        defer { try? FileManager.default.removeItem(atPath: log) }
        process.standardError = FileHandle(forWritingAtPath: log)
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        // `meterwise run` says which pid it started (`ip netns exec` may stand between us and it).
        func started() -> Int32? {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            guard let range = text.range(of: "started sh (pid ") else { return nil }
            return Int32(text[range.upperBound...].prefix { $0.isNumber })
        }
        #expect(await eventually { started() != nil }, "the command did not start on Wi-Fi")
        let child = try #require(started())

        try uplinks.device.ip("link", "set", "wlan0", "down")
        #expect(await eventually(timeout: .seconds(1)) { Self.state(child) == "T" }, "not stopped within 1 s of the move to wwan0")
        try await Task.sleep(for: .seconds(2.5))
        #expect(Self.state(child) == "T", "the command ran on the metered link")

        try uplinks.device.ip("link", "set", "wlan0", "up")
        try uplinks.device.ip("route", "add", "default", "via", "10.77.1.1", "dev", "wlan0", "metric", "\(VethUplinks.wlanMetric)")
        #expect(await eventually(timeout: .seconds(2)) { Self.state(child) != "T" }, "not continued when wlan0 returned")
        #expect(await eventually(timeout: .seconds(10)) { !process.isRunning })
        #expect(process.terminationStatus == 7)
    }
}

/// A command that cannot be started ends `run` as a shell would: 127 not found, 126 not runnable; no usage text.
struct RunLaunchTests {
    @Test func aMissingCommandExits127AndANonExecutableFile126() throws {
        let missing = try BinaryRun.run(["run", "--local", "--", "meterwise-no-such-command-\(UInt32.random(in: 0...UInt32.max))"])
        #expect(missing.status == 127, "\(missing.stderr)")
        #expect(missing.stderr.contains("command not found"), "\(missing.stderr)")
        #expect(!missing.stderr.contains("Usage:"), "\(missing.stderr)")

        let path = "/tmp/mwl-\(UInt32.random(in: 0...UInt32.max)).sh"
        try #require(FileManager.default.createFile(atPath: path, contents: Data("#!/bin/sh\nexit 0\n".utf8),
                                                    attributes: [.posixPermissions: 0o644]))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let plain = try BinaryRun.run(["run", "--local", "--", path])
        #expect(plain.status == 126, "\(plain.stderr)")
        #expect(plain.stderr.contains("permission denied"), "\(plain.stderr)")
        #expect(!plain.stderr.contains("Usage:"), "\(plain.stderr)")

        let absent = try BinaryRun.run(["run", "--local", "--", "/nonexistent/dir/tool"])
        #expect(absent.status == 127, "\(absent.stderr)")
    }
}
