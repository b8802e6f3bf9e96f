import Foundation

/// A real squid from Debian, started by a test on a free loopback port with the stock configuration's access
/// rules (CONNECT only to port 443: `http_access deny CONNECT !SSL_ports`), minus `deny to_localhost` so it
/// may reach the test's servers on loopback; no cache. Its access log records every request with its
/// status and size. Stop it with `stop()`.
public final class Squid: Sendable {
    let server: ForegroundServer

    public static var binary: String? { ForegroundServer.binary(["/usr/sbin/squid", "/usr/bin/squid"]) }

    /// Why squid tests cannot run here, or nil when they can. squid keeps shared-memory segments in /dev/shm
    /// under fixed names, owned by its `proxy` user once root started it: another user's squid cannot
    /// create them, so the tests run as root (CI does).
    public static var unavailableReason: String? {
        if binary == nil { return "squid is not installed (apt-get install squid; CI installs it)" }
        if geteuid() != 0 {
            return "squid needs root here: its /dev/shm segments belong to its own user (CI runs as root)"
        }
        return nil
    }

    public init() throws {
        guard let binary = Self.binary else { throw NginxError(message: Self.unavailableReason!) }
        server = try ForegroundServer(
            name: "squid", binary: binary, configName: "squid.conf",
            config: { prefix, port in
                """
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
            }, arguments: { ["-N", "-f", $0] })
    }

    public var port: Int { server.port }

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
        server.file("access.log").split(separator: "\n").compactMap { line in
            let f = line.split(separator: " ", omittingEmptySubsequences: true)
            guard f.count >= 7, let bytes = Int64(f[4]) else { return nil }
            return Entry(result: String(f[3]), bytes: bytes, method: String(f[5]), target: String(f[6]))
        }
    }

    public func stop() { server.remove() }
}
