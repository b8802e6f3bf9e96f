import Foundation
import TestSupport

/// A `meterwise daemon` on a scenario, with its own state directory and socket, driven through the CLI.
final class DaemonProcess: Sendable {
    let directory: URL
    let process: Process
    var socket: String { directory.appendingPathComponent("d.sock").path }

    init(
        directory: URL, scenario: String, policy: String = RepoPaths.file("policies/default.yaml"),
        extra: [String] = [], environment: [String: String] = [:]
    ) throws {
        self.directory = directory
        process = Process()
        process.executableURL = URL(fileURLWithPath: RepoPaths.binary)
        process.arguments =
            [
                "daemon", "--links", "scenario", "--scenario", scenario,
                "--state", directory.appendingPathComponent("state").path,
                "--socket", directory.appendingPathComponent("d.sock").path,
                "--policy", policy,
            ] + extra
        process.standardOutput = FileHandle.nullDevice
        // Its log (stderr), appended to across restarts in one directory: what a test may wait for.
        let logPath = directory.appendingPathComponent("daemon.log").path
        let log = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard log >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        process.standardError = FileHandle(fileDescriptor: log, closeOnDealloc: true)
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        }
        try process.run()
    }

    /// What the daemon has logged so far (stderr, every process started in this directory).
    var log: String {
        (try? String(contentsOfFile: directory.appendingPathComponent("daemon.log").path, encoding: .utf8)) ?? ""
    }

    func waitUntilListening() async -> Bool {
        await eventually(timeout: .seconds(20)) { FileManager.default.fileExists(atPath: socket) }
    }

    func cli(_ arguments: [String]) throws -> BinaryRun {
        try BinaryRun.run(arguments + ["--socket", socket])
    }

    /// The CLI run as user nobody (root runs it through runuser).
    func cliAsNobody(_ arguments: [String]) throws -> BinaryRun {
        try BinaryRun.run(arguments + ["--socket", socket], prefix: SecurityTests.asNobody)
    }

    func jobs() throws -> [[String: Any]] {
        let run = try cli(["list", "--json"])
        return (try? JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [[String: Any]]) ?? []
    }

    /// One request to the control API with curl, as a program would make it.
    func api(_ path: String, method: String = "GET", body: String? = nil, maxTime: Int? = nil) throws -> BinaryRun {
        var arguments = ["-sS", "--unix-socket", socket, "-X", method, "http://localhost" + path]
        if let body { arguments += ["-H", "Content-Type: application/json", "--data", body] }
        if let maxTime { arguments += ["--max-time", "\(maxTime)"] }
        return try BinaryRun.run(arguments, executable: "/usr/bin/curl")
    }

    func kill(_ signal: Int32) {
        Foundation.kill(process.processIdentifier, signal)
        process.waitUntilExit()
    }

    static func scenario(in directory: URL, _ text: String) throws -> String {
        let path = directory.appendingPathComponent("links.yaml").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static let cellularForAnHour = """
        links:
          wwan0: { kind: wwan }
        steps:
          - { at: 0s, up: [wwan0], primary: wwan0 }
        end: 1h
        """

    static let wifiForAnHour = """
        links:
          wlan0: { kind: wlan }
        steps:
          - { at: 0s, up: [wlan0], primary: wlan0 }
        end: 1h
        """
}
