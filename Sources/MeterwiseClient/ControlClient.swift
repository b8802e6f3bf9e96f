import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

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
                message: "\(ShownText.escaped(socketPath)) is not a socket: give the daemon's socket with --socket", status: 0)
        }
    }

    /// Sends a request; returns the HTTP status and the body. Nothing is sent unless the listener is root or
    /// this user (`DaemonPeer`).
    public func request(_ method: HTTPMethod, _ path: String, body: Data? = nil) async throws -> (Int, Data) {
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
                        message: "cannot reach the daemon at \(ShownText.escaped(socketPath)): is `meterwise daemon` running? "
                            + "(--socket sets the path) [\(error)]",
                        status: 0)
                }
            }
            group.addTask {
                try await Task.sleep(for: .seconds(30))
                throw ClientError(
                    message: "the daemon at \(ShownText.escaped(socketPath)) did not answer within 30 s", status: 0)
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
    }

    /// Sends a request and decodes a 2xx JSON answer; an error answer becomes the daemon's message.
    public func call<T: Decodable>(_ method: HTTPMethod, _ path: String, body: Data? = nil, as: T.Type) async throws -> (T, Data) {
        let (status, data) = try await request(method, path, body: body)
        guard (200..<300).contains(status) else {
            let message = (try? ControlAPI.decoder().decode(ControlAPI.ErrorBody.self, from: data))?.error
                ?? String(decoding: data, as: UTF8.self)
            throw ClientError(message: message, status: status)
        }
        return (try ControlAPI.decoder().decode(T.self, from: data), data)
    }

    /// The event stream, one decoded event per line, until the daemon closes it. `query` (e.g.
    /// `tags=apt&size=1000`) adds the `decision` events of that question.
    public func events(query: String = "", _ handle: (ControlAPI.EventBody) -> Void) async throws {
        try checkSocket()
        let connection = try await DaemonConnection.open(socketPath)
        try await connection.exchange(.GET, "/v1/events" + (query.isEmpty ? "" : "?" + query)) { head, body in
            guard head.status == .ok else {
                let data = try await body.collect(upTo: 1 << 20)
                let message = (try? ControlAPI.decoder().decode(ControlAPI.ErrorBody.self, from: data))?.error
                    ?? String(decoding: data.prefix(500), as: UTF8.self)
                throw ClientError(message: message, status: Int(head.status.code))
            }
            var pending = Data()
            while let buffer = try await body.next() {
                pending.append(contentsOf: buffer.readableBytesView)
                while let newline = pending.firstIndex(of: 0x0A) {
                    let line = pending[pending.startIndex..<newline]
                    pending = Data(pending[(newline + 1)...])
                    if let event = try? ControlAPI.decoder().decode(ControlAPI.EventBody.self, from: line) { handle(event) }
                }
            }
        }
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
