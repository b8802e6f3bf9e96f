import Foundation

/// A real squid from Debian, started by a test in the foreground on a free loopback port with the stock
/// configuration's access rules (CONNECT only to port 443: `http_access deny CONNECT !SSL_ports`), minus
/// `deny to_localhost` so it may reach the test's servers on loopback; no cache. Its access log records
/// every request with its status and size. Stop it with `stop()`.
public final class Squid: @unchecked Sendable {
    public let port: Int
    let prefix: String
    private let process: Process

    public static var binary: String? {
        ["/usr/sbin/squid", "/usr/bin/squid"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Why squid tests cannot run here, or nil when they can.
    public static var unavailableReason: String? {
        binary == nil ? "squid is not installed (apt-get install squid; CI installs it)" : nil
    }

    public init() throws {
        guard let binary = Self.binary else { throw NginxError(message: Self.unavailableReason!) }
        prefix = NSTemporaryDirectory() + "meterwise-squid-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: prefix, withIntermediateDirectories: true)
        // squid drops to its own user: the log directory must stay writable for it.
        chmod(prefix, 0o777)
        port = try Nginx.freePort()
        let config = """
            http_port 127.0.0.1:\(port)
            acl localnet src 127.0.0.0/8
            acl SSL_ports port 443
            acl Safe_ports port 80 443 1025-65535
            acl CONNECT method CONNECT
            http_access deny !Safe_ports
            http_access deny CONNECT !SSL_ports
            http_access allow localnet
            http_access deny all
            cache deny all
            access_log stdio:\(prefix)/access.log
            cache_log \(prefix)/cache.log
            pid_filename \(prefix)/squid.pid
            coredump_dir \(prefix)
            cache_store_log none
            logfile_rotate 0
            shutdown_lifetime 0 seconds
            pinger_enable off
            dns_nameservers 127.0.0.1
            """
        try config.write(toFile: prefix + "/squid.conf", atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["-N", "-f", prefix + "/squid.conf"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        for _ in 0..<200 {
            if Nginx.canConnect(port: port) { return }
            if !process.isRunning { break }
            usleep(50_000)
        }
        stop()
        throw NginxError(message: "squid did not start listening on 127.0.0.1:\(port)")
    }

    /// The proxy's URL.
    public var url: String { "http://127.0.0.1:\(port)" }

    /// One line of the access log: the result (`TCP_MISS/206`), bytes sent to the client (head and body),
    /// the method and the URL or `host:port`.
    public struct Entry: Sendable, Equatable {
        public var result: String
        public var bytes: Int64
        public var method: String
        public var target: String
    }

    /// The access log so far (squid writes a line when a request ends).
    public var entries: [Entry] {
        let text = (try? String(contentsOfFile: prefix + "/access.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let f = line.split(separator: " ", omittingEmptySubsequences: true)
            guard f.count >= 7, let bytes = Int64(f[4]) else { return nil }
            return Entry(result: String(f[3]), bytes: bytes, method: String(f[5]), target: String(f[6]))
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
