import Foundation

/// A real HTTP proxy for tests: tinyproxy from Debian, started in the foreground on a free loopback port
/// with its own configuration and log (every CONNECT is logged). Stop it with `stop()`.
public final class Tinyproxy: @unchecked Sendable {
    public let port: Int
    let prefix: String
    private let process: Process

    /// The tinyproxy binary, or nil when it is not installed.
    public static var binary: String? {
        ["/usr/bin/tinyproxy", "/usr/sbin/tinyproxy"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Why proxy tests cannot run here, or nil when they can.
    public static var unavailableReason: String? {
        binary == nil ? "tinyproxy is not installed (apt-get install tinyproxy; CI installs it)" : nil
    }

    /// Starts tinyproxy on 127.0.0.1, allowing only loopback clients; with `basicAuth` ("user pass") it
    /// asks for those credentials.
    public init(basicAuth: String? = nil) throws {
        guard let binary = Self.binary else { throw NginxError(message: Self.unavailableReason!) }
        prefix = NSTemporaryDirectory() + "meterwise-tinyproxy-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: prefix, withIntermediateDirectories: true)
        // tinyproxy may drop to another user: its log directory must stay writable.
        chmod(prefix, 0o777)
        port = try Nginx.freePort()
        let config = """
            Port \(port)
            Listen 127.0.0.1
            Timeout 60
            LogFile "\(prefix)/tinyproxy.log"
            LogLevel Connect
            MaxClients 50
            Allow 127.0.0.1
            DisableViaHeader Yes
            \(basicAuth.map { "BasicAuth \($0)" } ?? "")
            """
        try config.write(toFile: prefix + "/tinyproxy.conf", atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["-d", "-c", prefix + "/tinyproxy.conf"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        for _ in 0..<100 {
            if Nginx.canConnect(port: port) { return }
            if !process.isRunning { break }
            usleep(50_000)
        }
        stop()
        throw NginxError(message: "tinyproxy did not start listening on 127.0.0.1:\(port)")
    }

    /// The proxy's URL.
    public var url: String { "http://127.0.0.1:\(port)" }

    /// The log so far (one `CONNECT host:port` line per tunnel).
    public var log: String { (try? String(contentsOfFile: prefix + "/tinyproxy.log", encoding: .utf8)) ?? "" }

    /// The CONNECT requests logged so far (`127.0.0.1:PORT`).
    public var connects: [String] {
        log.split(separator: "\n").compactMap { line in
            guard let r = line.range(of: "CONNECT ", options: .backwards), line.contains("Request") else { return nil }
            return String(line[r.upperBound...].split(separator: " ").first ?? "")
        }
    }

    public func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: prefix)
    }
}
