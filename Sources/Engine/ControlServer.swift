import Foundation
import MeterwiseClient
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix

/// The control API: HTTP/1.1 + JSON on a Unix domain socket (docs/api.md).
///
/// The socket is created with mode 0600 (0660 with a group), so only its owner (and the group) may
/// talk to the daemon. `bind()` creates it; `serve(_:)` answers until its task is cancelled, then removes
/// the socket file.
public struct ControlServer<C: Clock>: Sendable where C.Duration == Duration, C.Instant: Sendable {
    public let path: String
    public let group: String?
    let router: ControlRouter<C>
    let logger: Logger

    public init(path: String, group: String? = nil, engine: Engine<C>,
                logger: Logger = Logger(label: "meterwise.api")) {
        self.path = path
        self.group = group
        self.router = ControlRouter(engine: engine)
        self.logger = logger
    }

    typealias Connection = NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>

    /// Binds the socket; call `serve` with the result.
    public func bind() async throws -> NIOAsyncChannel<NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, Never> {
        let directory = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw EngineError(.socket, "cannot create \(directory) for the control socket: choose another --socket", cause: error)
        }
        let previous = umask(0o177)
        defer { umask(previous) }
        let channel: NIOAsyncChannel<Connection, Never>
        do {
            channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true) { child in
                    child.eventLoop.makeCompletedFuture {
                        try child.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                        return try Connection(wrappingChannelSynchronously: child)
                    }
                }
        } catch {
            throw EngineError(.socket, "cannot listen on \(path): is another daemon running? (remove the file if not)", cause: error)
        }
        if let group {
            guard let entry = getgrnam(group) else {
                throw EngineError(.socket, "no group \(group): create it or drop --group")
            }
            chown(path, getuid(), entry.pointee.gr_gid)
            chmod(path, 0o660)
        } else {
            chmod(path, 0o600)
        }
        return channel
    }

    /// Serves connections until cancelled.
    public func serve(_ channel: NIOAsyncChannel<NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, Never>) async throws {
        defer { unlink(path) }
        try await withThrowingDiscardingTaskGroup { group in
            try await channel.executeThenClose { inbound in
                for try await connection in inbound {
                    group.addTask { await self.handle(connection) }
                }
            }
        }
    }

    func handle(_ connection: Connection) async {
        do {
            try await connection.executeThenClose { inbound, outbound in
                var head: HTTPRequestHead?
                var body = Data()
                for try await part in inbound {
                    switch part {
                    case let .head(request):
                        head = request
                        body = Data()
                    case var .body(buffer):
                        guard body.count + buffer.readableBytes <= 1 << 20 else {
                            try await respond(outbound, head: head, ControlResponse.json(
                                ControlAPI.ErrorBody(error: "request body over 1 MiB", code: EngineError.Code.invalidRequest.rawValue), status: 413))
                            return
                        }
                        body.append(contentsOf: buffer.readBytes(length: buffer.readableBytes) ?? [])
                    case .end:
                        guard let request = head else { continue }
                        if request.method == .GET && request.uri.hasPrefix("/v1/events") {
                            try await streamEvents(outbound, head: request)
                            return
                        }
                        let response = await router.handle(method: request.method.rawValue, path: request.uri, body: body)
                        try await respond(outbound, head: request, response)
                        head = nil
                    }
                }
            }
        } catch {
            logger.debug("control connection ended: \(error)")
        }
    }

    func respond(_ outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>, head: HTTPRequestHead?,
                 _ response: ControlResponse) async throws {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: response.contentType)
        headers.add(name: "Content-Length", value: "\(response.body.count)")
        let version = head?.version ?? .http1_1
        try await outbound.write(.head(HTTPResponseHead(version: version, status: .init(statusCode: response.status),
                                                        headers: headers)))
        try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: response.body))))
        try await outbound.write(.end(nil))
    }

    /// `GET /v1/events`: one JSON object per line, chunked, until the client goes away.
    func streamEvents(_ outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>, head: HTTPRequestHead) async throws {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/x-ndjson")
        headers.add(name: "Transfer-Encoding", value: "chunked")
        try await outbound.write(.head(HTTPResponseHead(version: head.version, status: .ok, headers: headers)))
        let engine = router.engine
        // The current state first, so a watcher starts with the picture, then every change.
        let encoder = ControlAPI.encoder()
        let events = engine.events.subscribe()
        try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: try encoder.encode(
            ControlAPI.body(for: .links(await engine.snapshot))) + Data("\n".utf8)))))
        for await event in events {
            guard let body = ControlAPI.body(for: event) else { continue }
            try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: try encoder.encode(body) + Data("\n".utf8)))))
        }
        try await outbound.write(.end(nil))
    }
}
