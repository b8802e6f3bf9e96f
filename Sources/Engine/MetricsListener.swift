import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// `--metrics-listen ADDR`: the Prometheus text of `GET /metrics` on a TCP port, for a fleet's Prometheus
/// to scrape. Only `/metrics` is served, nothing else of the control API; a bare port listens on loopback.
/// Connections are capped and an idle one is closed, so an exposed port cannot tie the daemon up.
public struct MetricsListener<C: Clock>: Sendable where C.Duration == Duration, C.Instant: Sendable {
    public let address: Address
    let engine: Engine<C>
    let logger: Logger
    let open = OpenConnections()
    static var maxConnections: Int { 32 }

    public init(address: Address, engine: Engine<C>, logger: Logger) {
        self.address = address
        self.engine = engine
        self.logger = logger
    }

    /// Where to listen: `PORT` (loopback), `HOST:PORT` or `[IPv6]:PORT`.
    public struct Address: Sendable, Equatable, CustomStringConvertible {
        public var host: String
        public var port: Int

        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }

        /// Parses `--metrics-listen`; the error says what a valid value looks like.
        public init(parsing text: String) throws(EngineError) {
            let usage = "use PORT (loopback), HOST:PORT, or [IPv6]:PORT; 0.0.0.0:PORT listens on every interface"
            var host = "127.0.0.1"
            var portText = Substring(text)
            if text.hasPrefix("[") {
                guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                    throw EngineError(.invalidRequest, "--metrics-listen \(text): \(usage)")
                }
                host = String(text[text.index(after: text.startIndex)..<close])
                portText = text[text.index(close, offsetBy: 2)...]
            } else if let colon = text.lastIndex(of: ":") {
                host = String(text[..<colon])
                portText = text[text.index(after: colon)...]
            }
            guard !host.isEmpty, !host.contains(where: { $0.isWhitespace || $0 == "/" }),
                let port = Int(portText), (1...65535).contains(port)
            else {
                throw EngineError(.invalidRequest, "--metrics-listen \(text): \(usage)")
            }
            self.init(host: host, port: port)
        }

        public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    typealias Connection = NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>

    /// Binds the port; serve with `serve(_:)`.
    public func bind() async throws -> NIOAsyncChannel<
        NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, Never
    > {
        do {
            return try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.backlog, value: 64)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .bind(host: address.host, port: address.port) { child in
                    child.eventLoop.makeCompletedFuture {
                        try child.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: .seconds(10)))
                        try child.pipeline.syncOperations.addHandler(IdleCloser())
                        try child.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                        return try Connection(wrappingChannelSynchronously: child)
                    }
                }
        } catch {
            throw EngineError(
                .socket, "cannot listen for metrics on \(address): choose another --metrics-listen",
                cause: error)
        }
    }

    /// Answers scrapes until cancelled.
    public func serve(_ channel: NIOAsyncChannel<NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, Never>)
        async throws
    {
        logger.info("metrics on http://\(address)/metrics")
        try await withThrowingDiscardingTaskGroup { group in
            try await channel.executeThenClose { inbound in
                for try await connection in inbound {
                    guard open.admit(upTo: Self.maxConnections) else {
                        try? await connection.channel.close()
                        continue
                    }
                    group.addTask {
                        defer { open.release() }
                        await handle(connection)
                    }
                }
            }
        }
    }

    func handle(_ connection: Connection) async {
        do {
            try await connection.executeThenClose { inbound, outbound in
                var head: HTTPRequestHead?
                for try await part in inbound {
                    if case let .head(request) = part { head = request }
                    guard case .end = part, let request = head else { continue }
                    head = nil
                    let path = request.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.uri
                    let (status, type, body): (HTTPResponseStatus, String, String)
                    if request.method != .GET && request.method != .HEAD {
                        (status, type, body) = (.methodNotAllowed, "text/plain", "only GET /metrics here\n")
                    } else if path != "/metrics" {
                        (status, type, body) = (.notFound, "text/plain", "only /metrics is served here\n")
                    } else {
                        (status, type, body) = (.ok, Metrics.contentType, await Metrics.render(engine: engine))
                    }
                    var headers = HTTPHeaders()
                    headers.add(name: "Content-Type", value: type)
                    headers.add(name: "Content-Length", value: "\(body.utf8.count)")
                    if !request.isKeepAlive { headers.add(name: "Connection", value: "close") }
                    try await outbound.write(
                        .head(HTTPResponseHead(version: request.version, status: status, headers: headers)))
                    if request.method != .HEAD {
                        try await outbound.write(.body(.byteBuffer(ByteBuffer(string: body))))
                    }
                    try await outbound.write(.end(nil))
                    if !request.isKeepAlive { return }
                }
            }
        } catch {
            logger.debug("metrics connection ended: \(error)")
        }
    }
}

/// Connections open on the metrics port, capped.
final class OpenConnections: Sendable {
    private let count = Mutex(0)

    /// Counts one more; false (nothing counted) at the cap.
    func admit(upTo limit: Int) -> Bool {
        count.withLock { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
    }

    func release() {
        count.withLock { $0 -= 1 }
    }
}
