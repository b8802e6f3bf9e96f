import AsyncHTTPClient
import NIOCore
import NIOSSL

/// The real `PortalAPIHints.Query`: one GET over https, `Accept: application/captive+json`, no redirect
/// followed, no proxy (the API is on the network the portal guards), 5 s to connect and 5 s between reads,
/// at most 64 KiB of answer. The certificate is checked against `tls`'s roots (the system's by default), as
/// RFC 8908 requires.
public enum PortalAPIQuery {
    public static func live(tls: TLSConfiguration = .makeClientConfiguration()) -> PortalAPIHints.Query {
        // One client (one TLS context) for every query of the source: a client per query cost about half a
        // MiB each that a lease changing again and again piled up.
        let holder = PortalAPIClient(tls: tls)
        return { url in
            guard url.hasPrefix("https://") else { return .failure(PortalAPIProblem("is not an https URL")) }
            guard PortalAPIAnswer.apiURL(url) != nil else {
                return .failure(PortalAPIProblem("is not a URL that can be asked (host, port 1-65535, no credentials)"))
            }
            return await ask(url, client: holder.client)
        }
    }

    static func ask(_ url: String, client: HTTPClient) async -> Result<PortalAPIAnswer, PortalAPIProblem> {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "application/captive+json")
        do {
            let response = try await client.execute(request, timeout: .seconds(10))
            guard response.status == .ok else {
                return .failure(PortalAPIProblem("answered HTTP \(response.status.code), not 200"))
            }
            let body = try await response.body.collect(upTo: PortalAPIAnswer.maxBytes)
            return PortalAPIAnswer.parse(
                Array(body.readableBytesView), contentType: response.headers.first(name: "Content-Type"))
        } catch is NIOTooManyBytesError {
            return .failure(PortalAPIProblem("answered more than 64 KiB"))
        } catch {
            return .failure(PortalAPIProblem("cannot be asked: \(String(describing: error).prefix(200))"))
        }
    }
}

/// The query's HTTP client, shut down when the last query closure that holds it goes.
final class PortalAPIClient: Sendable {
    let client: HTTPClient

    init(tls: TLSConfiguration) {
        let configuration = HTTPClient.Configuration(
            tlsConfiguration: tls, redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(5), read: .seconds(5)))
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    deinit {
        client.shutdown { _ in }
    }
}
