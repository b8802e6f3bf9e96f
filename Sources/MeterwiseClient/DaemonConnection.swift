import CFileCalls
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOPosix

/// One HTTP exchange with the daemon over its Unix socket, on a connection whose other end has been
/// vouched for first: after `connect`, the listener's `SO_PEERCRED` uid must be root or the caller's
/// (`DaemonPeer.refusal`), and only then is the request written. A check of the path before connecting
/// (owner, type) cannot prove that: the path can be swapped for a symlink to another user's listener
/// between the check and the connect.
struct DaemonConnection: Sendable {
    typealias AsyncChannel = NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>

    let socketPath: String
    let channel: AsyncChannel
    let peer: DaemonPeer

    /// Connects to `socketPath` and checks who listens there; throws (having sent nothing) when it is
    /// neither root nor the caller.
    static func open(_ socketPath: String, caller: UInt32 = geteuid()) async throws(ClientError) -> DaemonConnection {
        let channel: AsyncChannel
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(.seconds(10))
                .connect(unixDomainSocketPath: socketPath) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        return try AsyncChannel(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw ClientError(
                message: "cannot reach the daemon at \(ShownText.escaped(socketPath)): is `meterwise daemon` running? "
                    + "(--socket sets the path) [\(error)]",
                status: 0)
        }
        guard let peer = await Self.peer(of: channel.channel) else {
            try? await channel.channel.close()
            throw ClientError(
                message:
                    "cannot tell who listens on \(ShownText.escaped(socketPath)) (no SO_PEERCRED): nothing was sent to it",
                status: 0)
        }
        if let refusal = peer.refusal(caller: caller, socket: socketPath) {
            try? await channel.channel.close()
            throw ClientError(message: refusal, status: 0)
        }
        return DaemonConnection(socketPath: socketPath, channel: channel, peer: peer)
    }

    /// The listener's pid, uid and gid as the kernel recorded them at `listen()`.
    static func peer(of channel: any Channel) async -> DaemonPeer? {
        guard let provider = channel as? any SocketOptionProvider else { return nil }
        let future: EventLoopFuture<mw_peer_credentials> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(mw_so_peercred()))
        guard let credentials = try? await future.get() else { return nil }
        return DaemonPeer(pid: credentials.pid, uid: credentials.uid, gid: credentials.gid)
    }

    /// Writes the request, hands the response's head and body to `read`, then closes the connection.
    func exchange<T>(
        _ method: HTTPMethod, _ uri: String, body: Data? = nil,
        read: (HTTPResponseHead, inout ResponseBody) async throws -> T
    ) async throws -> T {
        try await channel.executeThenClose { inbound, outbound in
            var head = HTTPRequestHead(version: .http1_1, method: method, uri: uri)
            head.headers.add(name: "Host", value: "localhost")
            head.headers.add(name: "Connection", value: "close")
            if let body {
                head.headers.add(name: "Content-Type", value: "application/json")
                head.headers.add(name: "Content-Length", value: String(body.count))
            } else if method == .POST || method == .PUT {
                head.headers.add(name: "Content-Length", value: "0")
            }
            try await outbound.write(.head(head))
            if let body { try await outbound.write(.body(.byteBuffer(ByteBuffer(data: body)))) }
            try await outbound.write(.end(nil))
            var parts = inbound.makeAsyncIterator()
            while let part = try await parts.next() {
                // 1xx answers come before the real one.
                guard case .head(let response) = part, response.status.code >= 200 else { continue }
                var body = ResponseBody(parts: parts)
                return try await read(response, &body)
            }
            throw ClientError(
                message: "the daemon at \(ShownText.escaped(socketPath)) closed the connection without an answer",
                status: 0)
        }
    }

    /// A response's body, buffer by buffer, until its end.
    struct ResponseBody {
        var parts: NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator
        var ended = false

        mutating func next() async throws -> ByteBuffer? {
            while !ended, let part = try await parts.next() {
                switch part {
                case .head: continue
                case .body(let buffer): return buffer
                case .end: ended = true
                }
            }
            ended = true
            return nil
        }

        /// The whole body; fails past `limit` bytes.
        mutating func collect(upTo limit: Int) async throws -> Data {
            var data = Data()
            while let buffer = try await next() {
                guard data.count + buffer.readableBytes <= limit else {
                    throw ClientError(message: "the daemon's answer is over \(limit >> 20) MiB", status: 0)
                }
                data.append(contentsOf: buffer.readableBytesView)
            }
            return data
        }
    }
}
