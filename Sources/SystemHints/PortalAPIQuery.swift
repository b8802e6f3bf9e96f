import AsyncHTTPClient
import NIOCore
import NIOSSL

/// The real `PortalAPIHints.Query`: one GET over https, `Accept: application/captive+json`, no redirect
/// followed, no proxy (the API is on the network the portal guards), 5 s to connect and 5 s between reads,
/// at most 64 KiB of answer. The certificate is checked against `tls`'s roots (the system's by default), as
/// RFC 8908 requires.
public enum PortalAPIQuery {
    public static func live(tls: TLSConfiguration = .makeClientConfiguration()) -> PortalAPIHints.Query {
        { url in
            guard url.hasPrefix("https://") else { return .failure(PortalAPIProblem("is not an https URL")) }
            let configuration = HTTPClient.Configuration(
                tlsConfiguration: tls, redirectConfiguration: .disallow,
                timeout: .init(connect: .seconds(5), read: .seconds(5)))
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            let result = await ask(url, client: client)
            try? await client.shutdown()
            return result
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
        } catch let error as NIOTooManyBytesError {
            _ = error
            return .failure(PortalAPIProblem("answered more than 64 KiB"))
        } catch {
            return .failure(PortalAPIProblem("cannot be asked: \(String(describing: error).prefix(200))"))
        }
    }
}
