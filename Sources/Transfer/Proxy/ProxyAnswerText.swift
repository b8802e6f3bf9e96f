/// What the user reads when an HTTP proxy refuses a request: its status, its reason, and what to do.
enum ProxyAnswerText {
    /// The proxy refused a CONNECT tunnel (https) to `target` with a 4xx.
    static func refusedTunnel(_ answer: ProxyAnswer, proxy: ProxyServer, target: String) -> String {
        var text = "The proxy \(proxy) refused to open a tunnel to \(target): \(answer.shown)."
        switch answer.status {
        case 401, 403, 407:
            text += " It does not allow CONNECT to this port or from this user"
            text += " (squid allows CONNECT only to the ports in SSL_ports by default)"
            text += "; ask its operator to allow it, or bypass the proxy with no_proxy or --no-proxy."
        default:
            text += " Check the URL, or bypass the proxy with no_proxy or --no-proxy."
        }
        return text
    }

    /// The proxy answered a forwarded http:// request itself with a 4xx (it carried `X-Squid-Error` or
    /// `Proxy-Status`).
    static func refusedRequest(_ answer: ProxyAnswer, proxy: ProxyServer, url: String) -> String {
        "The proxy \(proxy) refused the request for \(RedactedURL.redact(url)): \(answer.shown). Ask its operator to allow it, or bypass the proxy with no_proxy or --no-proxy."
    }
}
