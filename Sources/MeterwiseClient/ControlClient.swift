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

    /// A readable error before connecting: no daemon, or not a socket there (a regular file or a folder would
    /// make the connection wait for its timeout). Not a check of trust: who listens is checked on the
    /// connection itself (`DaemonConnection`), since the path may change between this and the connect.
    func checkSocket() throws(ClientError) {
        var info = stat()
        guard stat(socketPath, &info) == 0 else {
            throw ClientError(
                message: "no control socket at \(ShownText.escaped(socketPath)): no daemon is running (start one: "
                    + "`systemctl start meterwise`, `systemctl --user start meterwise` or `meterwise daemon`), or give its socket with --socket",
                status: 0)
        }
        guard info.st_mode & S_IFMT == S_IFSOCK else {
            throw ClientError(
                message: "\(ShownText.escaped(socketPath)) is not a socket: give the daemon's socket with --socket",
                status: 0)
        }
    }

    /// Sends a request; returns the HTTP status and the body. Nothing is sent unless the listener is root or
    /// this user (`DaemonPeer`).
    /// The whole exchange must end within `timeout`.
    public func request(
        _ method: HTTPMethod, _ path: String, body: Data? = nil,
        timeout: Duration = .seconds(30)
    ) async throws -> (Int, Data) {
        try checkSocket()
        let connection = try await DaemonConnection.open(socketPath)
        let socketPath = self.socketPath
        return try await withThrowingTaskGroup(of: (Int, Data).self) { group in
            group.addTask {
                do {
                    return try await connection.exchange(method, path, body: body) { head, body in
                        (Int(head.status.code), try await body.collect(upTo: 64 << 20))
                    }
                } catch let error as ClientError {
                    throw error
                } catch {
                    throw ClientError(
                        message:
                            "cannot reach the daemon at \(ShownText.escaped(socketPath)): is `meterwise daemon` running? "
                            + "(--socket sets the path) [\(error)]",
                        status: 0)
                }
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw ClientError(
                    message:
                        "the daemon at \(ShownText.escaped(socketPath)) did not answer within \(StreamLiveness.text(timeout))",
                    status: 0)
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
    }

    /// Sends a request and decodes a 2xx JSON answer; an error answer becomes the daemon's message.
    public func call<T: Decodable>(
        _ method: HTTPMethod, _ path: String, body: Data? = nil, as: T.Type,
        timeout: Duration = .seconds(30)
    ) async throws -> (T, Data) {
        let (status, data) = try await request(method, path, body: body, timeout: timeout)
        guard (200..<300).contains(status) else {
            let message =
                (try? ControlAPI.decoder().decode(ControlAPI.ErrorBody.self, from: data))?.error
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
        let connection = try await DaemonConnection.open(socketPath)
        let socketPath = self.socketPath
        // When the last bytes came, and how long the stream may be silent (the head's timeout until it is in).
        let heard = LastHeard(liveness: StreamLiveness(interval: StreamLiveness.headTimeout / StreamLiveness.misses))
        let channel = connection.channel.channel
        try await withThrowingTaskGroup(of: Void.self) { group in
            // The watchdog closes a silent connection; the reading below then ends and says why.
            group.addTask {
                while true {
                    let (at, liveness, headIn) = heard.state.withLock { ($0.at, $0.liveness, $0.headIn) }
                    let silence = ContinuousClock.now - at
                    if liveness.isLost(after: silence) {
                        heard.state.withLock {
                            $0.lost =
                                "the daemon at \(ShownText.escaped(socketPath)) sent nothing for "
                                + "\(StreamLiveness.text(silence)) (its keep-alive comes every \(StreamLiveness.text(liveness.interval))): "
                                + "it is gone or stuck"
                        }
                        try? await channel.close()
                        return
                    }
                    // Until the head is in, its interval is unknown: look again soon, so a short one is kept.
                    let next = liveness.nextLook(after: silence)
                    try await Task.sleep(for: headIn ? next : min(next, .milliseconds(50)))
                }
            }
            defer { group.cancelAll() }
            do {
                try await connection.exchange(.GET, "/v1/events" + (query.isEmpty ? "" : "?" + query)) { head, body in
                    guard head.status == .ok else {
                        let data = try await body.collect(upTo: 1 << 20)
                        let message =
                            (try? ControlAPI.decoder().decode(ControlAPI.ErrorBody.self, from: data))?.error
                            ?? String(decoding: data.prefix(500), as: UTF8.self)
                        throw ClientError(message: message, status: Int(head.status.code))
                    }
                    let liveness = StreamLiveness(header: head.headers.first(name: "Meterwise-Keepalive"))
                    heard.state.withLock { $0 = (ContinuousClock.now, liveness, true, nil) }
                    var pending = Data()
                    while let buffer = try await body.next() {
                        heard.state.withLock { $0.at = ContinuousClock.now }
                        pending.append(contentsOf: buffer.readableBytesView)
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
            } catch let error as ClientError {
                throw heard.state.withLock { $0.lost }.map { ClientError(message: $0, status: 0) } ?? error
            } catch {
                if let lost = heard.state.withLock({ $0.lost }) { throw ClientError(message: lost, status: 0) }
                throw ClientError(
                    message:
                        "the daemon's event stream at \(ShownText.escaped(socketPath)) broke off (the daemon stopped or restarted): \(error)",
                    status: 0)
            }
            if let lost = heard.state.withLock({ $0.lost }) { throw ClientError(message: lost, status: 0) }
        }
    }
}

/// When an event stream's last bytes came, how long it may stay silent, whether the response's head (with
/// the daemon's interval) came, and why the watchdog closed it.
final class LastHeard: Sendable {
    let state: Mutex<(at: ContinuousClock.Instant, liveness: StreamLiveness, headIn: Bool, lost: String?)>

    init(liveness: StreamLiveness) {
        state = Mutex((ContinuousClock.now, liveness, false, nil))
    }
}

/// The daemon refused a request (the message is the daemon's, it says what to fix), or it could not be
/// reached (`status` 0).
public struct ClientError: Error, CustomStringConvertible {
    public var message: String
    public var status: Int
    /// The message as a terminal may show it: it may come from a listener that is not ours, or quote what a
    /// server or another user wrote (`ShownText`).
    public var description: String { ShownText.escaped(message) }
}
