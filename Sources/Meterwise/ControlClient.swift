import ArgumentParser
import AsyncHTTPClient
import Engine
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// Options every client command shares.
struct ClientOptions: ParsableArguments {
    @Option(help: "The daemon's control socket (default: the daemon's default for this user).")
    var socket: String?

    @Flag(help: "Print JSON.")
    var json = false

    var socketPath: String { socket ?? StatePaths.socket }
}

/// Talks to the daemon's control API over its Unix socket.
struct ControlClient {
    let socketPath: String

    var base: String {
        let encoded = socketPath.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? socketPath
        return "http+unix://\(encoded)"
    }

    func checkSocket() throws {
        guard FileManager.default.fileExists(atPath: socketPath) else {
            throw ClientError(message: "no control socket at \(socketPath): is `meterwise daemon` running? (--socket sets the path)", status: 0)
        }
    }

    func request(_ method: HTTPMethod, _ path: String, body: Data? = nil) async throws -> (Int, Data) {
        try checkSocket()
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(data: body))
        }
        do {
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            let bytes = try await response.body.collect(upTo: 64 << 20)
            return (Int(response.status.code), Data(buffer: bytes))
        } catch {
            throw ClientError(
                message: "cannot reach the daemon at \(socketPath): is `meterwise daemon` running? (--socket sets the path) [\(error)]",
                status: 0)
        }
    }

    /// Sends a request and decodes a 2xx JSON answer; an error answer becomes the daemon's message.
    func call<T: Decodable>(_ method: HTTPMethod, _ path: String, body: Data? = nil, as: T.Type) async throws -> (T, Data) {
        let (status, data) = try await request(method, path, body: body)
        guard (200..<300).contains(status) else {
            let message = (try? ControlAPI.decoder().decode(ControlAPI.ErrorBody.self, from: data))?.error
                ?? String(decoding: data, as: UTF8.self)
            throw ClientError(message: message, status: status)
        }
        return (try ControlAPI.decoder().decode(T.self, from: data), data)
    }

    /// The event stream, one decoded event per line, until the daemon closes it.
    func events(_ handle: (ControlAPI.EventBody) -> Void) async throws {
        try checkSocket()
        let request = HTTPClientRequest(url: base + "/v1/events")
        let response: HTTPClientResponse
        do {
            response = try await HTTPClient.shared.execute(request, timeout: .hours(24 * 365))
        } catch {
            throw ClientError(message: "cannot reach the daemon at \(socketPath): is `meterwise daemon` running?", status: 0)
        }
        var pending = Data()
        for try await buffer in response.body {
            pending.append(Data(buffer: buffer))
            while let newline = pending.firstIndex(of: 0x0A) {
                let line = pending[pending.startIndex..<newline]
                pending = Data(pending[(newline + 1)...])
                if let event = try? ControlAPI.decoder().decode(ControlAPI.EventBody.self, from: line) { handle(event) }
            }
        }
    }
}

/// The daemon refused a request; the message is the daemon's (it says what to fix). Exit code 1.
struct ClientError: Error, CustomStringConvertible {
    var message: String
    var status: Int
    var description: String { message }
}
