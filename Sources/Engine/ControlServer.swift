import CFileCalls
import Foundation
import Logging
import MeterwiseClient
import NIOCore
import NIOHTTP1
import NIOPosix
import Policy
import Synchronization

/// The control API: HTTP/1.1 + JSON on a Unix domain socket (docs/api.md).
///
/// The socket is created with mode 0600 (0660 with a group), so only its owner (and the group) may
/// talk to the daemon; every request carries its asker's uid (SO_PEERCRED). `bind()` creates it;
/// `serve(_:)` answers until its task is cancelled, then removes the socket file if it is still its own.
/// Each user may hold `ConnectionCount.perUser` connections; a connection that sends nothing for
/// `idleTimeout` is closed (event streams excepted: they carry a `keepalive` event every `keepalive`
/// instead, so a client can tell a quiet daemon from a lost one). Cancelling `serve` closes every
/// connection at once, event streams included.
public struct ControlServer<C: Clock>: Sendable where C.Duration == Duration, C.Instant: Sendable {
    public let path: String
    public let group: String?
    let router: ControlRouter<C>
    let logger: Logger
    /// How often an event stream carries a `keepalive` event (announced in its `Meterwise-Keepalive` header).
    public let keepalive: Duration
    let connections = ConnectionCount()
    /// The published socket's device and inode, to remove only it at the end.
    let published = PublishedSocket()
    static var idleTimeout: TimeAmount { .seconds(30) }
    static var idleHandlerName: String { "meterwise.idle" }

    /// The default interval of an event stream's `keepalive` events.
    public static var defaultKeepalive: Duration { .seconds(15) }

    public init(
        path: String, group: String? = nil, engine: Engine<C>, keepalive: Duration = Self.defaultKeepalive,
        logger: Logger = Logger(label: "meterwise.api")
    ) {
        self.path = path
        self.group = group
        self.keepalive = keepalive
        self.router = ControlRouter(engine: engine)
        self.logger = logger
    }

    typealias Connection = NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>

    /// Binds the socket; call `serve` with the result.
    public func bind() async throws -> NIOAsyncChannel<
        NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, Never
    > {
        let socket = ControlSocket(path: path, group: group)
        try socket.checkFree()
        let privateDirectory = try socket.makePrivateDirectory()
        defer { rmdir(privateDirectory) }
        let bound = privateDirectory + "/socket"
        let channel: NIOAsyncChannel<Connection, Never>
        do {
            channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.backlog, value: 256)
                .bind(unixDomainSocketPath: bound, cleanupExistingSocketFile: false) { child in
                    child.eventLoop.makeCompletedFuture {
                        try child.pipeline.syncOperations.addHandler(
                            IdleStateHandler(readTimeout: Self.idleTimeout), name: Self.idleHandlerName)
                        try child.pipeline.syncOperations.addHandler(IdleCloser())
                        try child.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                        return try Connection(wrappingChannelSynchronously: child)
                    }
                }
        } catch {
            unlink(bound)
            throw EngineError(.socket, "cannot listen on \(path): choose another --socket", cause: error)
        }
        do {
            published.set(try socket.publish(bound))
        } catch {
            unlink(bound)
            try? await channel.channel.close()
            throw error
        }
        return channel
    }

    /// Serves connections until cancelled.
    public func serve(_ channel: NIOAsyncChannel<NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, Never>)
        async throws
    {
        defer {
            if let identity = published.get() { ControlSocket(path: path, group: group).remove(ifStill: identity) }
        }
        try await withThrowingDiscardingTaskGroup { group in
            try await channel.executeThenClose { inbound in
                for try await connection in inbound {
                    group.addTask { await self.accept(connection) }
                }
            }
        }
    }

    /// Reads who is asking, applies the per-user connection cap, then serves the connection.
    func accept(_ connection: Connection) async {
        guard let asker = await Self.asker(of: connection.channel) else {
            logger.debug("control connection without peer credentials refused")
            try? await connection.channel.close()
            return
        }
        guard connections.open(for: asker.uid) else {
            // Closed unanswered: the HTTP pipeline must not send a response before a request arrived.
            logger.notice(
                "uid \(asker.uid) has \(ConnectionCount.perUser) control connections open; one more was closed")
            try? await connection.channel.close()
            return
        }
        defer { connections.close(for: asker.uid) }
        await handle(connection, asker: asker)
    }

    /// The peer's uid and gid as the kernel recorded them at connect (SO_PEERCRED).
    static func asker(of channel: any Channel) async -> Asker? {
        guard let provider = channel as? any SocketOptionProvider else { return nil }
        let future: EventLoopFuture<mw_peer_credentials> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(mw_so_peercred()))
        guard let credentials = try? await future.get() else { return nil }
        return Asker(uid: credentials.uid, gid: credentials.gid)
    }

    func handle(_ connection: Connection, asker: Asker) async {
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
                            try await respond(
                                outbound, head: head,
                                ControlResponse.json(
                                    ControlAPI.ErrorBody(
                                        error: "request body over 1 MiB", code: EngineError.Code.invalidRequest.rawValue
                                    ), status: 413))
                            return
                        }
                        body.append(contentsOf: buffer.readBytes(length: buffer.readableBytes) ?? [])
                    case .end:
                        guard let request = head else { continue }
                        if request.method == .GET && ControlRouter<C>.pathOf(request.uri) == "/v1/events" {
                            // A watcher may stay quiet for hours: no idle timeout from here on.
                            try? await connection.channel.pipeline.removeHandler(name: Self.idleHandlerName).get()
                            // Ends when the client goes away, even if no event is ever written to notice it, and
                            // at once when the server stops: the channel is closed, which ends the wait and any write.
                            let channel = connection.channel
                            await withTaskCancellationHandler {
                                await withTaskGroup(of: Void.self) { group in
                                    group.addTask {
                                        try? await self.streamEvents(outbound, head: request, asker: asker)
                                    }
                                    group.addTask { try? await channel.closeFuture.get() }
                                    await group.next()
                                    group.cancelAll()
                                    channel.close(promise: nil)
                                }
                            } onCancel: {
                                channel.close(promise: nil)
                            }
                            return
                        }
                        let response = await router.handle(
                            method: request.method.rawValue, path: request.uri, body: body,
                            asker: asker)
                        try await respond(outbound, head: request, response)
                        head = nil
                        if !request.isKeepAlive { return }
                    }
                }
            }
        } catch {
            logger.debug("control connection ended: \(error)")
        }
    }

    func respond(
        _ outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>, head: HTTPRequestHead?,
        _ response: ControlResponse
    ) async throws {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: response.contentType)
        headers.add(name: "Content-Length", value: "\(response.body.count)")
        let version = head?.version ?? .http1_1
        try await outbound.write(
            .head(
                HTTPResponseHead(
                    version: version, status: .init(statusCode: response.status),
                    headers: headers)))
        try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: response.body))))
        try await outbound.write(.end(nil))
    }

    /// `GET /v1/events`: one JSON object per line, chunked, until the client goes away. With a question in
    /// the query (`?tags=apt&size=N`, as for `/v1/decision`) the stream also carries a `decision` event
    /// without a job for that question: its answer at once, then each time it changes.
    func streamEvents(
        _ outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>, head: HTTPRequestHead,
        asker: Asker
    ) async throws {
        var question: JobInfo?
        do {
            question = head.uri.contains("?") ? try ControlRouter<C>.decisionQuery(head.uri) : nil
            question?.owner = asker.uid
        } catch {
            try await respond(outbound, head: head, .error(error))
            return
        }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/x-ndjson")
        headers.add(name: "Transfer-Encoding", value: "chunked")
        headers.add(name: "Meterwise-Keepalive", value: Self.seconds(keepalive))
        try await outbound.write(.head(HTTPResponseHead(version: head.version, status: .ok, headers: headers)))
        let engine = router.engine
        if question != nil { await engine.noteQuestion() }
        // The current state first, so a watcher starts with the picture, then every change.
        let encoder = ControlAPI.encoder()
        let events = engine.events.subscribe()
        let line = { @Sendable (body: ControlAPI.EventBody) async throws in
            try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: try encoder.encode(body) + Data("\n".utf8)))))
        }
        try await line(ControlAPI.body(for: .links(await engine.snapshot))!)
        try await withThrowingTaskGroup(of: Void.self) { group in
            if let question {
                group.addTask {
                    try await DecisionWatch(engine: engine, job: question).run { decision in
                        try await line(ControlAPI.body(forQuestion: question, decision))
                    }
                }
            }
            let keepalive = self.keepalive
            group.addTask {
                // A quiet stream is the normal case (links change rarely): this line tells the client that the
                // daemon is still there, so it needs no read timeout and notices a daemon that is gone.
                while true {
                    try await Task.sleep(for: keepalive)
                    try await line(ControlAPI.EventBody(event: "keepalive"))
                }
            }
            group.addTask {
                for await event in events {
                    guard let body = ControlAPI.body(for: event) else { continue }
                    // Other users' jobs are not this asker's business.
                    if let job = body.job, !asker.seesEveryJob, await !engine.isVisible(job, to: asker) { continue }
                    try await line(body)
                }
            }
            try await group.next()
            group.cancelAll()
        }
        try await outbound.write(.end(nil))
    }

    /// The keep-alive interval as the header gives it: seconds, with a fraction when there is one ("15", "0.5").
    static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let milliseconds = attoseconds / 1_000_000_000_000_000
        return milliseconds == 0 ? "\(seconds)" : "\(seconds).\(String(format: "%03d", Int(milliseconds)))"
    }
}

/// Open control connections per uid, so one user's idle connections cannot lock out the others.
final class ConnectionCount: Sendable {
    static let perUser = 64
    private let counts = Mutex<[UInt32: Int]>([:])

    /// Counts a new connection; false (and nothing counted) when the user is at the cap. Root has none.
    func open(for uid: UInt32) -> Bool {
        counts.withLock { counts in
            let now = counts[uid, default: 0]
            guard uid == 0 || now < Self.perUser else { return false }
            counts[uid] = now + 1
            return true
        }
    }

    func close(for uid: UInt32) {
        counts.withLock { counts in
            let left = counts[uid, default: 1] - 1
            counts[uid] = left > 0 ? left : nil
        }
    }
}

/// Closes a connection that sent nothing for the idle timeout.
final class IdleCloser: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }
}

/// The device and inode of the socket file this server published.
final class PublishedSocket: Sendable {
    private let identity = Mutex<(dev_t, ino_t)?>(nil)
    func set(_ value: (dev_t, ino_t)) { identity.withLock { $0 = value } }
    func get() -> (dev_t, ino_t)? { identity.withLock { $0 } }
}
