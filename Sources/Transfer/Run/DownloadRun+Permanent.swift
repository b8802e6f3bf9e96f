import AsyncHTTPClient

#if canImport(Glibc)
import Glibc
#endif

/// Failures of a request that no retry can fix: a TLS certificate that does not verify, a server that
/// wants a client certificate, a proxy that wants credentials. The download fails at once with what to do.
extension DownloadRun {
    /// The proxy this download's requests go through, nil when direct.
    var proxy: ProxyServer? { request.proxy.server(for: request.url) }

    /// The proxy answered 407: it wants credentials, or refused the ones in its URL.
    var proxyCredentialsWanted: TransferError {
        let shown = proxy.map { "The proxy \($0)" } ?? "The proxy"
        if proxy?.username != nil {
            return TransferError(
                .proxy,
                "\(shown) refused the user name and password in its URL (407); check them (%-encode @, : and % in them)."
            )
        }
        return TransferError(
            .proxy,
            "\(shown) asks for a user name and password (407); put them in the proxy URL: http://USER:PASSWORD@HOST:PORT."
        )
    }

    /// The failure `error` stands for when retrying cannot fix it; nil for the retryable rest.
    func permanentFailure(_ error: any Error, url: String) async -> TransferError? {
        if let client = error as? HTTPClientError, client == .proxyAuthenticationRequired {
            return proxyCredentialsWanted
        }
        if let client = error as? HTTPClientError, client == .invalidProxyResponse, let proxy,
            case .success(let authority) = URLAuthority.parse(url)
        {
            // The client says only "refused": ask the proxy once more to learn its status and reason. A 4xx is
            // its answer (a port it does not allow, credentials it refuses) and ends the download at once; a
            // 5xx (it cannot reach the server) or no answer is retried as an outage.
            let host = authority.host.contains(":") ? "[\(authority.host)]" : authority.host
            let target = "\(host):\(authority.effectivePort)"
            if let answer = await ProxyAnswer.toConnect(target, proxy: proxy), (400..<500).contains(answer.status) {
                return TransferError(.proxy, ProxyAnswerText.refusedTunnel(answer, proxy: proxy, target: target))
            }
            return nil
        }
        guard let failure = TLSFailure.classify(error), case .success(let authority) = URLAuthority.parse(url) else {
            return nil
        }
        logger.debug(
            "TLS failure", metadata: ["error": "\(String(reflecting: error))", "url": "\(RedactedURL.redact(url))"])
        var facts: CertificateFacts?
        // The probe takes the download's path: direct, or a CONNECT tunnel through its HTTP proxy.
        if failure == .serverCertificate || failure == .hostName, proxy?.kind != .socks5 {
            facts = await CertificateProbe.facts(host: authority.host, port: authority.effectivePort, proxy: proxy)
        }
        return tlsError(failure, authority: authority, facts: facts)
    }

    /// The download's error for a TLS failure on `authority`'s server.
    func tlsError(_ failure: TLSFailure, authority: URLAuthority, facts: CertificateFacts?) -> TransferError {
        TransferError(
            .tls,
            TLSFailureText.message(
                failure, host: authority.host, port: authority.effectivePort, facts: facts, settings: request.tls,
                proxy: proxy,
                now: Int64(time(nil))))
    }

    /// A 400 over https whose page says the server wanted a client certificate (nginx's `ssl_verify_client`
    /// answers so instead of refusing the handshake) as the TLS failure it is; nil for any other 400.
    func clientCertificateRefusal(_ body: HTTPClientResponse.Body, url: String) async -> TransferError? {
        guard case .success(let authority) = URLAuthority.parse(url), authority.scheme == "https" else { return nil }
        var text = ""
        do {
            for try await buffer in body {
                text += String(decoding: buffer.readableBytesView.prefix(4096), as: UTF8.self)
                if text.utf8.count >= 4096 { break }
            }
        } catch {}
        let failure: TLSFailure
        if text.contains("No required SSL certificate was sent") {
            failure = .clientCertificateRequired
        } else if text.contains("SSL certificate error") {
            failure = .clientCertificateRefused("the server answered 400: SSL certificate error")
        } else {
            return nil
        }
        return tlsError(failure, authority: authority, facts: nil)
    }
}
