import Foundation

/// A real nginx started by a test: its own config under a temporary prefix, listening on 127.0.0.1
/// on a free port, serving `root`. Stop it with `stop()`.
public final class Nginx: @unchecked Sendable {
    /// The port nginx listens on.
    public let port: Int
    /// The directory served at `/`.
    public let root: String
    /// The prefix holding nginx.conf, logs and temp directories.
    public let prefix: String
    private let process: Process

    /// The nginx binary, or nil when nginx is not installed (`apt-get install nginx-light`).
    public static var binary: String? {
        ["/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    /// Why nginx tests cannot run here, or nil when they can.
    public static var unavailableReason: String? {
        binary == nil ? "nginx is not installed (apt-get install nginx-light; CI installs it)" : nil
    }

    /// Whether it listens with TLS (`https` URLs).
    public let isTLS: Bool

    /// Starts nginx serving `root`; `location` directives go inside `location / { }` (e.g.
    /// `max_ranges 0;` to ignore Range, `limit_rate 8m;` to slow it down). With `tls`, it listens with
    /// `ssl` and `tls` goes into the server block (`ssl_certificate ...; ssl_verify_client on; ...`); with
    /// `http2` too, it offers HTTP/2 in the TLS handshake (ALPN).
    public init(root: String, location: String = "", tls: String? = nil, http2: Bool = false) throws {
        guard let binary = Self.binary else {
            throw NginxError(message: Self.unavailableReason!)
        }
        let prefix = NSTemporaryDirectory() + "meterwise-nginx-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: prefix + "/tmp", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: prefix + "/logs", withIntermediateDirectories: true)
        let port = try Self.freePort()
        let config = """
            daemon off;
            master_process off;
            worker_processes 1;
            error_log \(prefix)/logs/error.log warn;
            pid \(prefix)/nginx.pid;
            events { worker_connections 256; }
            http {
                # nginx's combined format, and the Range asked for (the delta tests count ranges per request).
                log_format ranges '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent '
                    '"$http_referer" "$http_user_agent" "$http_range"';
                access_log \(prefix)/logs/access.log ranges;
                client_body_temp_path \(prefix)/tmp/body;
                proxy_temp_path \(prefix)/tmp/proxy;
                fastcgi_temp_path \(prefix)/tmp/fastcgi;
                uwsgi_temp_path \(prefix)/tmp/uwsgi;
                scgi_temp_path \(prefix)/tmp/scgi;
                default_type application/octet-stream;
                sendfile on;
                tcp_nopush on;
                server {
                    listen 127.0.0.1:\(port)\(tls == nil ? "" : " ssl")\(tls != nil && http2 ? " http2" : "");
                    \(tls ?? "")
                    root \(root);
                    location / { \(location) }
                }
            }
            """
        try config.write(toFile: prefix + "/nginx.conf", atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["-p", prefix, "-c", prefix + "/nginx.conf"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        self.port = port
        self.root = root
        self.prefix = prefix
        self.isTLS = tls != nil
        try waitUntilListening()
    }

    /// The URL of `path` (starting with /).
    public func url(_ path: String) -> String { "\(isTLS ? "https" : "http")://127.0.0.1:\(port)\(path)" }

    /// Stops nginx and removes its prefix. nginx is killed (SIGKILL): a child of a test process may
    /// inherit a signal mask that blocks SIGTERM, and single-process nginx never unblocks it.
    public func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: prefix)
    }

    private func waitUntilListening() throws {
        for _ in 0..<100 {
            if Self.canConnect(port: port) { return }
            if !process.isRunning { break }
            usleep(50_000)
        }
        let log = (try? String(contentsOfFile: prefix + "/logs/error.log", encoding: .utf8)) ?? ""
        stop()
        throw NginxError(message: "nginx did not start listening on 127.0.0.1:\(port): \(log)")
    }

    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw NginxError(message: "socket() failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { ptr -> Bool in
                bind(fd, ptr, length) == 0 && getsockname(fd, ptr, &length) == 0
            }
        }
        guard bound else { throw NginxError(message: "could not find a free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func canConnect(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}

/// nginx could not be started.
public struct NginxError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
