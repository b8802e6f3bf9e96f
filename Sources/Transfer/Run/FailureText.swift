import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

#if canImport(Glibc)
import Glibc
#endif

/// What a failed request says to a person: the system's words for an errno (`Connection refused`), a
/// sentence for the HTTP client's own failures; never a library type name. The full error goes to the
/// debug log.
enum FailureText {
    static func describe(_ error: any Error) -> String {
        if let io = error as? IOError { return errnoText(io.errnoCode) }
        if let connection = error as? NIOConnectionError {
            // Every address failed: say the first one's reason; no address: the name did not resolve.
            if let first = connection.connectionErrors.first { return describe(first.error) }
            if connection.dnsAError != nil || connection.dnsAAAAError != nil {
                return "the host name \(connection.host) could not be resolved (DNS)"
            }
        }
        if let unknown = error as? SocketAddressError.UnknownHost {
            return "the host name \(unknown.host) could not be resolved (DNS)"
        }
        if let parser = error as? HTTPParserError {
            if case .invalidEOFState = parser { return "the connection ended in the middle of the response" }
            return "the server's HTTP response is malformed"
        }
        if case NIOSSLError.uncleanShutdown? = error as? NIOSSLError {
            return "the TLS connection was cut without its close_notify"
        }
        if error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError {
            return "the TLS handshake failed (the server broke it off or sent what is not TLS)"
        }
        if let client = error as? HTTPClientError {
            switch client {
            case .invalidProxyResponse:
                return
                    "the proxy refused to open the tunnel (its answer to CONNECT was not 200: it may not allow CONNECT to this port, refuse the credentials, or not reach the server)"
            case .httpProxyHandshakeTimeout: return "the proxy did not answer the CONNECT in time"
            case .socksHandshakeTimeout: return "the proxy did not answer as a SOCKS5 proxy"
            case .tlsHandshakeTimeout: return "the TLS handshake did not complete in time"
            case .connectTimeout: return "connecting timed out"
            case .readTimeout: return "the server stopped sending"
            case .remoteConnectionClosed: return "the server closed the connection"
            case .invalidURL: return "the URL is not valid"
            case .deadlineExceeded: return "the request took too long"
            case .getConnectionFromPoolTimeout: return "no connection became free in time"
            default: return "the HTTP request failed"
            }
        }
        if let channel = error as? ChannelError {
            switch channel {
            case .connectTimeout: return "connecting timed out"
            case .ioOnClosedChannel, .alreadyClosed, .eof: return "the connection closed"
            default: return "the connection failed"
            }
        }
        let text = String(describing: error)
        // NIO's connection errors name the errno at the end: `... (errno: 111)`.
        if let range = text.firstRange(of: "errno: "),
            let code = Int32(text[range.upperBound...].prefix { $0.isNumber })
        {
            return errnoText(code)
        }
        return "an unexpected error (run with METERWISE_LOG=debug for the details)"
    }

    static func errnoText(_ code: Int32) -> String {
        String(cString: strerror(code)).lowercased()
    }
}
