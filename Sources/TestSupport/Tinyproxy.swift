import Foundation

/// A real HTTP proxy for tests: tinyproxy from Debian, started in the foreground on a free loopback port
/// with its own configuration and log (every CONNECT is logged). Stop it with `stop()`.
public final class Tinyproxy: Sendable {
    let server: ForegroundServer

    /// The tinyproxy binary, or nil when it is not installed.
    public static var binary: String? { ForegroundServer.binary(["/usr/bin/tinyproxy", "/usr/sbin/tinyproxy"]) }

    /// Why proxy tests cannot run here, or nil when they can.
    public static var unavailableReason: String? {
        binary == nil ? "tinyproxy is not installed (apt-get install tinyproxy; CI installs it)" : nil
    }

    /// Starts tinyproxy on 127.0.0.1, allowing only loopback clients; with `basicAuth` ("user pass") it
    /// asks for those credentials.
    public init(basicAuth: String? = nil) throws {
        guard let binary = Self.binary else { throw NginxError(message: Self.unavailableReason!) }
        server = try ForegroundServer(
            name: "tinyproxy", binary: binary, configName: "tinyproxy.conf",
            config: { prefix, port in
                """
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
            }, arguments: { ["-d", "-c", $0] })
    }

    public var port: Int { server.port }

    /// The proxy's URL.
    public var url: String { "http://127.0.0.1:\(port)" }

    /// The log so far (one `CONNECT host:port` line per tunnel).
    public var log: String { server.file("tinyproxy.log") }

    /// The CONNECT requests logged so far (`127.0.0.1:PORT`).
    public var connects: [String] {
        log.split(separator: "\n").compactMap { line in
            guard let r = line.range(of: "CONNECT ", options: .backwards), line.contains("Request") else { return nil }
            return String(line[r.upperBound...].split(separator: " ").first ?? "")
        }
    }

    public func stop() { server.remove() }
}
