import Foundation

/// A real Apache httpd from Debian (`apache2`), started by a test in the foreground (`-X`, one process) on a
/// free loopback port with a minimal configuration of its own, serving `root` with its defaults: a strong
/// ETag, or a weak one for a file modified within the last second, and Last-Modified. Its access log records
/// each request's status, body bytes and the Range, If-Range and If-Match headers. Stop it with `stop()`.
public final class Apache: Sendable {
    public let root: String
    let server: ForegroundServer

    public static let binary = "/usr/sbin/apache2"
    static let modules = "/usr/lib/apache2/modules"

    /// Why Apache tests cannot run here, or nil when they can.
    public static var unavailableReason: String? {
        FileManager.default.isExecutableFile(atPath: binary)
            && FileManager.default.fileExists(atPath: modules + "/mod_mpm_event.so")
            ? nil : "apache2 is not installed (apt-get install apache2; CI installs it)"
    }

    public init(root: String) throws {
        if let reason = Self.unavailableReason { throw NginxError(message: reason) }
        self.root = root
        server = try ForegroundServer(
            name: "apache", binary: Self.binary, configName: "httpd.conf",
            config: { prefix, port in
                """
                ServerRoot \(prefix)
                LoadModule mpm_event_module \(Self.modules)/mod_mpm_event.so
                LoadModule authz_core_module \(Self.modules)/mod_authz_core.so
                Listen 127.0.0.1:\(port)
                ServerName 127.0.0.1
                PidFile \(prefix)/httpd.pid
                ErrorLog \(prefix)/error.log
                User nobody
                Group nogroup
                DocumentRoot \(root)
                <Directory \(root)>
                  Require all granted
                </Directory>
                LogFormat "%>s %B %{Range}i|%{If-Range}i|%{If-Match}i" meterwise
                CustomLog \(prefix)/access.log meterwise
                """
            }, arguments: { ["-X", "-f", $0] })
    }

    public var port: Int { server.port }

    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// One request as logged: status, the Range, If-Range and If-Match headers (`-` when absent).
    public struct Entry: Sendable, Equatable {
        public var status: Int
        public var range: String
        public var ifRange: String
        public var ifMatch: String
    }

    /// The access log so far (Apache writes each line as the request ends).
    public var entries: [Entry] {
        server.file("access.log").split(separator: "\n").compactMap { line in
            let f = line.split(separator: " ", maxSplits: 2)
            guard f.count == 3, let status = Int(f[0]) else { return nil }
            let headers = f[2].split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            guard headers.count == 3 else { return nil }
            return Entry(status: status, range: headers[0], ifRange: headers[1], ifMatch: headers[2])
        }
    }

    public func stop() { server.remove() }
}
