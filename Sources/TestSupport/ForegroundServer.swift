import Foundation

/// A Debian server a test runs in the foreground on a free loopback port, with its own configuration and
/// logs under a temporary prefix: what squid, tinyproxy, lighttpd and Apache share. The process starts with
/// an empty signal mask (through python3, since a child inherits the test process's mask, where SIGTERM may
/// be blocked), so a `stop()` by SIGTERM reaches it.
public final class ForegroundServer: @unchecked Sendable {
    public let port: Int
    /// The directory holding its configuration and logs (mode 0777: servers that drop to their own user
    /// still write their logs there).
    public let prefix: String
    private let process: Process
    private let stopSignal: Int32

    /// The first of `candidates` that is executable, or nil.
    public static func binary(_ candidates: [String]) -> String? {
        candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Makes a prefix named after `name`, writes `config(prefix, port)` to `prefix/configName`, starts
    /// `binary` with `arguments(configPath)` and waits until it listens on the port. `stopSignal` ends it
    /// (SIGTERM lets a server flush its logs).
    public init(
        name: String, binary: String, configName: String, stopSignal: Int32 = SIGKILL,
        config: (_ prefix: String, _ port: Int) -> String, arguments: (_ configPath: String) -> [String]
    ) throws {
        prefix = NSTemporaryDirectory() + "meterwise-\(name)-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: prefix, withIntermediateDirectories: true)
        chmod(prefix, 0o777)
        port = try Nginx.freePort()
        self.stopSignal = stopSignal
        let path = prefix + "/" + configName
        try config(prefix, port).write(toFile: path, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments =
            [
                "-c",
                "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execv(sys.argv[1], sys.argv[1:])",
                binary,
            ] + arguments(path)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        for _ in 0..<200 {
            if Nginx.canConnect(port: port) { return }
            if !process.isRunning { break }
            usleep(50_000)
        }
        remove()
        throw NginxError(message: "\(name) did not start listening on 127.0.0.1:\(port)")
    }

    /// The text of `prefix/name`, empty when it cannot be read.
    public func file(_ name: String) -> String {
        (try? String(contentsOfFile: prefix + "/" + name, encoding: .utf8)) ?? ""
    }

    /// Ends the server (its files stay until `remove()`).
    public func stop() {
        if process.isRunning {
            kill(process.processIdentifier, stopSignal)
            process.waitUntilExit()
        }
    }

    /// Stops it and removes its configuration and logs.
    public func remove() {
        stop()
        try? FileManager.default.removeItem(atPath: prefix)
    }
}
