import NIOSSL

/// What a failed TLS connection tells, read from the TLS library's error: a certificate that did not
/// verify, a server that wants (or refused) a client certificate, a handshake with nothing in common, a
/// port that does not speak TLS. Every one is permanent: retrying cannot fix it, so the download fails at
/// once with what to do. Pure.
public enum TLSFailure: Sendable, Equatable {
    /// The server's certificate did not verify (the probe tells why).
    case serverCertificate
    /// The server's certificate is not for the host name in the URL.
    case hostName
    /// The server asked for a client certificate and none was given.
    case clientCertificateRequired
    /// The server refused the client certificate (the TLS alert's name).
    case clientCertificateRefused(String)
    /// The server refused the handshake: no protocol version or cipher in common (the alert or reason).
    case handshakeRefused(String)
    /// What answered is not TLS (a plain-HTTP port, say).
    case notTLS

    /// The failure an error from a connection or request stands for; nil when it is not a TLS failure.
    public static func classify(_ error: any Error) -> TLSFailure? {
        if let extra = error as? NIOSSLExtraError, extra == .failedToValidateHostname { return .hostName }
        guard error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError else { return nil }
        return classify(text: String(describing: error))
    }

    /// The same, from the error's text (BoringSSL's reason names, which stay the same across versions).
    static func classify(text: String) -> TLSFailure? {
        let t = text.uppercased()
        if t.contains("CERTIFICATE_VERIFY_FAILED") { return .serverCertificate }
        if t.contains("ALERT_CERTIFICATE_REQUIRED") || t.contains("PEER_DID_NOT_RETURN_A_CERTIFICATE") {
            return .clientCertificateRequired
        }
        for alert in [
            "ALERT_BAD_CERTIFICATE", "ALERT_UNKNOWN_CA", "ALERT_CERTIFICATE_UNKNOWN", "ALERT_CERTIFICATE_EXPIRED",
            "ALERT_CERTIFICATE_REVOKED", "ALERT_UNSUPPORTED_CERTIFICATE", "ALERT_ACCESS_DENIED",
        ]
        where t.contains(alert) {
            return .clientCertificateRefused("TLS alert: " + alertName(alert))
        }
        if t.contains("WRONG_VERSION_NUMBER") || t.contains("HTTP_REQUEST") || t.contains("PACKET_LENGTH_TOO_LONG") {
            return .notTLS
        }
        for reason in [
            "ALERT_HANDSHAKE_FAILURE", "ALERT_PROTOCOL_VERSION", "UNSUPPORTED_PROTOCOL", "NO_SHARED_CIPHER",
            "NO_CIPHERS_AVAILABLE", "ALERT_INSUFFICIENT_SECURITY", "ALERT_ILLEGAL_PARAMETER", "ALERT_DECODE_ERROR",
            "ALERT_INTERNAL_ERROR", "ALERT_UNRECOGNIZED_NAME", "ALERT_NO_APPLICATION_PROTOCOL",
        ]
        where t.contains(reason) {
            return .handshakeRefused(alertName(reason))
        }
        return nil
    }

    /// `ALERT_UNKNOWN_CA` as `unknown CA`.
    static func alertName(_ reason: String) -> String {
        var name = reason
        if name.hasPrefix("ALERT_") { name.removeFirst(6) }
        return name.lowercased().split(separator: "_").map { $0 == "ca" ? "CA" : String($0) }.joined(separator: " ")
    }
}
