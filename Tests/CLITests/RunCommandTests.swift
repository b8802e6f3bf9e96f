import Foundation
import Lab
import TestSupport
import Testing

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
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("mwrun-\(UUID().uuidString)").path
        let log = base + ".log"
        let ticks = base + ".ticks"
        try #require(FileManager.default.createFile(atPath: log, contents: nil))
        defer { for path in [log, ticks] { try? FileManager.default.removeItem(atPath: path) } }
        // The command leaves a tick every 20 ms that it runs: its own record of when it ran, read afterwards
        // (a stopped command writes none), then exits 7.
        let script = "i=0; while [ $i -lt 100 ]; do echo $i >> '\(ticks)'; i=$((i+1)); sleep 0.02; done; exit 7"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = [
            "netns", "exec", uplinks.device.name, RepoPaths.binary, "run",
            "--policy", RepoPaths.file("policies/default.yaml"), "--", "sh", "-c", script,
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle(forWritingAtPath: log)
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        func stderr() -> String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }
        func ticked() -> Int {
            ((try? String(contentsOfFile: ticks, encoding: .utf8)) ?? "").split(separator: "\n").count
        }
        // `meterwise run` says which pid it started (`ip netns exec` may stand between us and it).
        func started() -> Int32? {
            guard let range = stderr().range(of: "started sh (pid ") else { return nil }
            return Int32(stderr()[range.upperBound...].prefix { $0.isNumber })
        }
        #expect(await eventually { started() != nil }, "the command did not start on Wi-Fi")
        let child = try #require(started())

        try uplinks.device.ip("link", "set", "wlan0", "down")
        #expect(
            await eventually(timeout: .seconds(1)) { Self.state(child) == "T" },
            "not stopped within 1 s of the move to wwan0")
        let ticksWhenStopped = ticked()
        // More link changes while wwan0 is the only uplink, each decided again: a second default route on
        // wwan0, and wlan0 up without a route. None may let the command run.
        try uplinks.device.ip(
            "route", "add", "default", "via", "10.77.2.1", "dev", "wwan0",
            "metric", "\(VethUplinks.wwanMetric + 1)")
        try uplinks.device.ip("link", "set", "wlan0", "up")
        let ticksBeforeWifi = ticked()
        #expect(Self.state(child) == "T", "the command was continued on the metered link: \(stderr())")

        try uplinks.device.ip(
            "route", "add", "default", "via", "10.77.1.1", "dev", "wlan0", "metric", "\(VethUplinks.wlanMetric)")
        // The fence: `run` decides the link changes in order and says each continue, so once it has said one
        // for Wi-Fi it has decided every change before it, and a continue on any of them would be a second line
        // (or this one, for another rule). The ticks cover the whole time until the route came, not a moment.
        #expect(
            await eventually(timeout: .seconds(2)) { stderr().contains("continued sh") },
            "not continued when wlan0 returned: \(stderr())")
        #expect(ticksBeforeWifi == ticksWhenStopped, "the command ran on the metered link: \(stderr())")
        let said = stderr().split(separator: "\n")
        #expect(said.filter { $0.contains("stopped sh") }.count == 1, "\(stderr())")
        let continued = said.filter { $0.contains("continued sh") }
        #expect(
            continued.count == 1 && continued[0].contains("run-unmetered"),
            "continued for another reason: \(stderr())")
        #expect(await eventually(timeout: .seconds(10)) { !process.isRunning })
        #expect(process.terminationStatus == 7)
        #expect(ticked() == 100, "the command did not run to its end")
    }
}

/// A command that cannot be started ends `run` as a shell would: 127 not found, 126 not runnable; no usage text.
struct RunLaunchTests {
    @Test func aMissingCommandExits127AndANonExecutableFile126() throws {
        let missing = try BinaryRun.run([
            "run", "--local", "--", "meterwise-no-such-command-\(UInt32.random(in: 0...UInt32.max))",
        ])
        #expect(missing.status == 127, "\(missing.stderr)")
        #expect(missing.stderr.contains("command not found"), "\(missing.stderr)")
        #expect(!missing.stderr.contains("Usage:"), "\(missing.stderr)")

        let path = "/tmp/mwl-\(UInt32.random(in: 0...UInt32.max)).sh"
        try #require(
            FileManager.default.createFile(
                atPath: path, contents: Data("#!/bin/sh\nexit 0\n".utf8),
                attributes: [.posixPermissions: 0o644]))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let plain = try BinaryRun.run(["run", "--local", "--", path])
        #expect(plain.status == 126, "\(plain.stderr)")
        #expect(plain.stderr.contains("permission denied"), "\(plain.stderr)")
        #expect(!plain.stderr.contains("Usage:"), "\(plain.stderr)")

        let absent = try BinaryRun.run(["run", "--local", "--", "/nonexistent/dir/tool"])
        #expect(absent.status == 127, "\(absent.stderr)")
    }

    /// The command starts with the signal actions it would have without `run` in between: one ignored when
    /// `run` started (SIGINT for `cmd &` in a script, SIGHUP under nohup, SIGPIPE) is ignored in the command
    /// too, and otherwise SIGTERM, which `run` listens for, and SIGPIPE, which the runtime ignores, are at their
    /// defaults. Before, SIGINT, SIGHUP and SIGPIPE were reset to their defaults: `nohup meterwise run -- tool`
    /// left `tool` open to SIGHUP.
    @Test func theCommandInheritsTheSignalsIgnoredAtTheStart() throws {
        func ignored(_ prefix: [String]) throws -> (mask: UInt64, stderr: String) {
            let run = try BinaryRun.run(
                [
                    "run", "--scenario", RepoPaths.file("docs/scenarios/commute.yaml"), "--policy",
                    RepoPaths.file("policies/default.yaml"), "--", "grep", "^SigIgn:", "/proc/self/status",
                ], prefix: prefix)
            let hex = run.stdout.split(separator: "\t").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            return (hex.flatMap { UInt64($0, radix: 16) } ?? .max, run.stderr)
        }
        func bit(_ signal: Int32) -> UInt64 { 1 << UInt64(signal - 1) }
        let plain = try ignored(["/usr/bin/env", "--default-signal=INT,HUP,TERM,PIPE"])
        #expect(plain.mask != .max, "no SigIgn line: \(plain.stderr)")
        #expect(plain.mask & (bit(SIGINT) | bit(SIGHUP) | bit(SIGTERM) | bit(SIGPIPE)) == 0, "\(plain)")
        let kept = try ignored(["/usr/bin/env", "--ignore-signal=INT,HUP,PIPE", "--default-signal=TERM"])
        #expect(kept.mask != .max, "no SigIgn line: \(kept.stderr)")
        #expect(kept.mask & bit(SIGINT) != 0, "SIGINT was reset: \(String(kept.mask, radix: 16))")
        #expect(kept.mask & bit(SIGHUP) != 0, "SIGHUP was reset: \(String(kept.mask, radix: 16))")
        #expect(kept.mask & bit(SIGPIPE) != 0, "SIGPIPE was reset: \(String(kept.mask, radix: 16))")
        #expect(kept.mask & bit(SIGTERM) == 0, "\(String(kept.mask, radix: 16))")
    }
}
