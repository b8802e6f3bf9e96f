import Foundation

/// A real lighttpd from Debian, started by a test in the foreground on a free loopback port, serving
/// `root` with its defaults (ranges, a strong ETag from inode, size and mtime, Last-Modified), its access
/// log in the combined format with the bytes sent. Stop it with `stop()`.
public final class Lighttpd: @unchecked Sendable {
    public let port: Int
    public let root: String
    let prefix: String
    private let process: Process

    public static var binary: String? {
        ["/usr/sbin/lighttpd", "/usr/bin/lighttpd"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Why lighttpd tests cannot run here, or nil when they can.
    public static var unavailableReason: String? {
        binary == nil ? "lighttpd is not installed (apt-get install lighttpd; CI installs it)" : nil
    }

    /// Starts lighttpd serving `root`; `extra` lines go into its configuration.
    public init(root: String, extra: String = "") throws {
        guard let binary = Self.binary else { throw NginxError(message: Self.unavailableReason!) }
        self.root = root
        prefix = NSTemporaryDirectory() + "meterwise-lighttpd-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: prefix, withIntermediateDirectories: true)
        port = try Nginx.freePort()
        let config = """
            server.document-root = "\(root)"
            server.bind = "127.0.0.1"
            server.port = \(port)
            server.errorlog = "\(prefix)/error.log"
            server.modules += ( "mod_accesslog" )
            accesslog.filename = "\(prefix)/access.log"
            accesslog.format = "%h %r %>s %b %{Range}i"
            mimetype.assign = ( "" => "application/octet-stream" )
            \(extra)
            """
        try config.write(toFile: prefix + "/lighttpd.conf", atomically: true, encoding: .utf8)
        // Through python3, which clears the signal mask first: a child inherits the test process's mask, where
        // SIGTERM may be blocked, and lighttpd would then never see the SIGTERM that stops it (and flushes its
        // access log).
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [
            "-c",
            "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execv(sys.argv[1], sys.argv[1:])",
            binary, "-D", "-f", prefix + "/lighttpd.conf",
        ]
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
        throw NginxError(message: "lighttpd did not start listening on 127.0.0.1:\(port)")
    }

    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// One line of the access log: the status, the body bytes sent and the Range asked (`-` for none).
    public struct Entry: Sendable, Equatable {
        public var status: Int
        public var bytes: Int64
        public var range: String
    }

    /// The access log; lighttpd writes it in batches, so read it after `stop()`.
    public var entries: [Entry] {
        let text = (try? String(contentsOfFile: prefix + "/access.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            // 127.0.0.1 GET /f.bin HTTP/1.1 206 1234 bytes=0-
            let f = line.split(separator: " ", omittingEmptySubsequences: true)
            guard f.count >= 7, let status = Int(f[4]) else { return nil }
            return Entry(status: status, bytes: Int64(f[5]) ?? 0, range: String(f[6]))
        }
    }

    /// Stops lighttpd (its log is flushed and kept until `remove()`).
    public func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
        }
    }

    /// Stops it and removes its configuration and logs.
    public func remove() {
        stop()
        try? FileManager.default.removeItem(atPath: prefix)
    }
}
