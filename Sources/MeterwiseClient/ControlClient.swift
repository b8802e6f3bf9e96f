import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import Synchronization

/// Talks to the daemon's control API over its Unix socket: what `meterwise add|list|status|...` use, and
/// what a Swift program uses to queue downloads or follow the daemon's events.
public struct ControlClient: Sendable {
    /// The daemon's control socket.
    public let socketPath: String

    /// A client of the daemon listening on `socketPath` (default: `StatePaths.clientSocket`, the user's own
    /// daemon when one runs, else the system's).
    public init(socketPath: String = StatePaths.clientSocket) {
        self.socketPath = socketPath
    }

    var base: String {
        let encoded = socketPath.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? socketPath
        return "http+unix://\(encoded)"
    }

    func checkSocket() throws(ClientError) {
        var info = stat()
        guard stat(socketPath, &info) == 0 else {
            throw ClientError(
                message: "no control socket at \(socketPath): no daemon is running (start one: `systemctl start meterwise`, "
                    + "`systemctl --user start meterwise` or `meterwise daemon`), or give its socket with --socket",
                status: 0)
        }
        // A regular file or a folder there would make the connection wait for its timeout.
        guard info.st_mode & S_IFMT == S_IFSOCK else {
            throw ClientError(message: "\(socketPath) is not a socket: give the daemon's socket with --socket", status: 0)
        }
        // A daemon runs as root or as you: a socket of another user may be a listener that collects your jobs.
        guard info.st_uid == 0 || info.st_uid == geteuid() else {
            throw ClientError(
                message: "\(socketPath) belongs to uid \(info.st_uid), neither root nor you: it is not a daemon to trust; check --socket",
                status: 0)
        }
    }

    /// Sends a request; returns the HTTP status and the body (the whole exchange within `timeout`).
    public func request(_ method: HTTPMethod, _ path: String, body: Data? = nil,
                        timeout: Duration = .seconds(30)) async throws -> (Int, Data) {
        try checkSocket()
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(data: body))
        }
        do {
            let response = try await HTTPClient.shared.execute(request, timeout: .nanoseconds(Int64(timeout / .nanoseconds(1))))
            let bytes = try await response.body.collect(upTo: 64 << 20)
            return (Int(response.status.code), Data(buffer: bytes))
        } catch {
            throw ClientError(
                message: "cannot reach the daemon at \(socketPath): is `meterwise daemon` running? (--socket sets the path) [\(error)]",
                status: 0)
        }
    }

    /// Sends a request and decodes a 2xx JSON answer; an error answer becomes the daemon's message.
    public func call<T: Decodable>(_ method: HTTPMethod, _ path: String, body: Data? = nil, as: T.Type,
                                   timeout: Duration = .seconds(30)) async throws -> (T, Data) {
        let (status, data) = try await request(method, path, body: body, timeout: timeout)
        guard (200..<300).contains(status) else {
            let message = (try? ControlAPI.decoder().decode(ControlAPI.ErrorBody.self, from: data))?.error
                ?? String(decoding: data, as: UTF8.self)
            throw ClientError(message: message, status: status)
        }
        return (try ControlAPI.decoder().decode(T.self, from: data), data)
    }

    /// The event stream, one decoded event per line, until the daemon closes it. `query` (e.g.
    /// `tags=apt&size=1000`) adds the `decision` events of that question. The stream has no read timeout:
    /// the daemon's `keepalive` events (consumed here, never handed on) say it is there, and a stream silent
    /// for `StreamLiveness.misses` of their intervals throws a `ClientError`: the daemon is gone or stuck.
    public func events(query: String = "", _ handle: (ControlAPI.EventBody) -> Void) async throws {
        try checkSocket()
        let request = HTTPClientRequest(url: base + "/v1/events" + (query.isEmpty ? "" : "?" + query))
        let socketPath = self.socketPath
        let (pieces, feed) = AsyncThrowingStream.makeStream(of: ByteBuffer.self)
        // When the last bytes came, and how long the stream may be silent (the head's timeout until it is in).
        let heard = LastHeard(liveness: StreamLiveness(interval: StreamLiveness.headTimeout / StreamLiveness.misses))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                let response: HTTPClientResponse
                do {
                    response = try await Self.streamingClient.execute(request, deadline: .distantFuture)
                } catch {
                    feed.finish(throwing: ClientError(
                        message: "cannot reach the daemon at \(socketPath): is `meterwise daemon` running? [\(error)]", status: 0))
                    return
                }
                guard response.status == .ok else {
                    let data = (try? await response.body.collect(upTo: 1 << 20)).map { Data(buffer: $0) } ?? Data()
                    let message = (try? ControlAPI.decoder().decode(ControlAPI.ErrorBody.self, from: data))?.error
                        ?? String(decoding: data.prefix(500), as: UTF8.self)
                    feed.finish(throwing: ClientError(message: message, status: Int(response.status.code)))
                    return
                }
                let liveness = StreamLiveness(header: response.headers.first(name: "Meterwise-Keepalive"))
                heard.state.withLock { $0 = (ContinuousClock.now, liveness) }
                heard.headIn.withLock { $0 = true }
                do {
                    for try await buffer in response.body {
                        heard.state.withLock { $0.at = ContinuousClock.now }
                        feed.yield(buffer)
                    }
                    feed.finish()
                } catch {
                    feed.finish(throwing: ClientError(
                        message: "the daemon's event stream at \(socketPath) broke off (the daemon stopped or restarted): \(error)",
                        status: 0))
                }
            }
            group.addTask {
                while true {
                    let (at, liveness) = heard.state.withLock { $0 }
                    let silence = ContinuousClock.now - at
                    if liveness.isLost(after: silence) {
                        feed.finish(throwing: ClientError(
                            message: "the daemon at \(socketPath) sent nothing for \(StreamLiveness.text(silence)) "
                                + "(its keep-alive comes every \(StreamLiveness.text(liveness.interval))): it is gone or stuck",
                            status: 0))
                        return
                    }
                    // Until the head is in, its interval is unknown: look again soon, so a short one is kept.
                    let headIn = heard.headIn.withLock { $0 }
                    try await Task.sleep(for: headIn ? liveness.nextLook(after: silence) : min(liveness.nextLook(after: silence), .milliseconds(50)))
                }
            }
            defer { group.cancelAll() }
            var pending = Data()
            for try await buffer in pieces {
                pending.append(Data(buffer: buffer))
                while let newline = pending.firstIndex(of: 0x0A) {
                    let line = pending[pending.startIndex..<newline]
                    pending = Data(pending[(newline + 1)...])
                    guard let event = try? ControlAPI.decoder().decode(ControlAPI.EventBody.self, from: line),
                          event.event != "keepalive"
                    else { continue }
                    handle(event)
                }
            }
        }
    }

    /// The client for event streams: no read timeout (a quiet stream is normal; `StreamLiveness` judges it).
    static let streamingClient = HTTPClient(
        eventLoopGroup: HTTPClient.defaultEventLoopGroup,
        configuration: HTTPClient.Configuration(timeout: .init(connect: .seconds(10), read: nil)))
}

/// When an event stream's last bytes came, and how long it may stay silent.
final class LastHeard: Sendable {
    let state: Mutex<(at: ContinuousClock.Instant, liveness: StreamLiveness)>
    /// The response's head came, with the daemon's interval.
    let headIn = Mutex(false)

    init(liveness: StreamLiveness) {
        state = Mutex((ContinuousClock.now, liveness))
    }
}

/// The daemon refused a request (the message is the daemon's, it says what to fix), or it could not be
/// reached (`status` 0).
public struct ClientError: Error, CustomStringConvertible {
    public var message: String
    public var status: Int
    public var description: String { message }
}
