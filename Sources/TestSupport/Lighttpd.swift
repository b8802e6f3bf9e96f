import Foundation

/// A real lighttpd from Debian, started by a test on a free loopback port, serving `root` with its defaults
/// (ranges, a strong ETag from inode, size and mtime, Last-Modified), its access log with each request's
/// status, body bytes and Range. `stop()` ends it (its log is flushed and kept until `remove()`).
public final class Lighttpd: Sendable {
    public let root: String
    let server: ForegroundServer

    public static var binary: String? { ForegroundServer.binary(["/usr/sbin/lighttpd", "/usr/bin/lighttpd"]) }

    /// Why lighttpd tests cannot run here, or nil when they can.
    public static var unavailableReason: String? {
        binary == nil ? "lighttpd is not installed (apt-get install lighttpd; CI installs it)" : nil
    }

    /// Starts lighttpd serving `root`.
    public init(root: String) throws {
        guard let binary = Self.binary else { throw NginxError(message: Self.unavailableReason!) }
        self.root = root
        server = try ForegroundServer(
            name: "lighttpd", binary: binary, configName: "lighttpd.conf", stopSignal: SIGTERM,
            config: { prefix, port in
                """
                server.document-root = "\(root)"
                server.bind = "127.0.0.1"
                server.port = \(port)
                server.errorlog = "\(prefix)/error.log"
                server.modules += ( "mod_accesslog" )
                accesslog.filename = "\(prefix)/access.log"
                accesslog.format = "%h %r %>s %b %{Range}i"
                mimetype.assign = ( "" => "application/octet-stream" )
                """
            }, arguments: { ["-D", "-f", $0] })
    }

    public var port: Int { server.port }

    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// One line of the access log: the status, the body bytes sent and the Range asked (`-` for none).
    public struct Entry: Sendable, Equatable {
        public var status: Int
        public var bytes: Int64
        public var range: String
    }

    /// The access log; lighttpd writes it in batches, so read it after `stop()`.
    public var entries: [Entry] {
        server.file("access.log").split(separator: "\n").compactMap { line in
            // 127.0.0.1 GET /f.bin HTTP/1.1 206 1234 bytes=0-
            let f = line.split(separator: " ", omittingEmptySubsequences: true)
            guard f.count >= 7, let status = Int(f[4]) else { return nil }
            return Entry(status: status, bytes: Int64(f[5]) ?? 0, range: String(f[6]))
        }
    }

    public func stop() { server.stop() }
    public func remove() { server.remove() }
}
