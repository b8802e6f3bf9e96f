/// The sentence a TLS failure gets: what failed, for which host, and the fix. No library names; the raw
/// error goes to the debug log. Pure.
enum TLSFailureText {
    static func message(
        _ failure: TLSFailure, host: String, port: Int, facts: CertificateFacts?, settings: TLSSettings,
        proxy: ProxyServer?, now: Int64
    ) -> String {
        let name = host.contains(":") ? "[\(host)]" : host
        let server = port == 443 ? name : "\(name):\(port)"
        let via = proxy.map { " (through the proxy \($0))" } ?? ""
        switch failure {
        case .hostName:
            return wrongHost(server: server, host: host, facts: facts, via: via)
        case .serverCertificate:
            switch facts?.problem(host: host, now: now) {
            case .expired?:
                return
                    "The TLS certificate of \(server)\(via) expired on \(CertificateFacts.show(facts!.notAfter)); this machine's clock says \(CertificateFacts.show(now)). The server must renew its certificate (or, if the clock is wrong, set it: timedatectl)."
            case .notYetValid?:
                return
                    "The TLS certificate of \(server)\(via) is valid only from \(CertificateFacts.show(facts!.notBefore)); this machine's clock says \(CertificateFacts.show(now)). Set the clock (timedatectl), or wait until then."
            case .otherHost?:
                return wrongHost(server: server, host: host, facts: facts, via: via)
            case nil where facts == nil:
                let trusted = settings.trustOrigin.map { "the CAs of \($0)" } ?? "the CAs this machine trusts"
                return
                    "The TLS certificate of \(server)\(via) could not be verified against \(trusted): it is expired, not yet valid, for another host, or from another CA. `openssl s_client -connect \(server)` shows it; if its CA is your own, pass --cacert CA.pem (a job: \"ca_file\")."
            case nil:
                let issuer = facts?.issuer.map { " (issued by \"\($0)\")" } ?? ""
                let trusted = settings.trustOrigin.map { "the CAs of \($0)" } ?? "the CAs this machine trusts"
                let fix =
                    settings.trustOrigin == nil
                    ? "If it is your own server with a private CA, pass --cacert CA.pem (a job: \"ca_file\"), or install the CA system-wide: copy it to /usr/local/share/ca-certificates/NAME.crt and run update-ca-certificates."
                    : "Give the CA that signed the server's certificate."
                return "The TLS certificate of \(server)\(via)\(issuer) is not signed by \(trusted). \(fix)"
            }
        case .clientCertificateRequired:
            return
                "\(server)\(via) requires a client certificate: pass --cert CERT.pem --key KEY.pem (a job: \"cert_file\", \"key_file\")."
        case .clientCertificateRefused(let alert):
            let which = settings.clientOrigin ?? "the client certificate"
            return
                "\(server)\(via) refused \(which) (\(alert)). Use a certificate the server's CA signed and that is still valid."
        case .handshakeRefused(let reason):
            return
                "\(server)\(via) refused the TLS handshake (\(reason)): it and Meterwise share no TLS version (1.2 or 1.3) or cipher. The server's TLS settings must allow TLS 1.2 or newer."
        case .notTLS:
            return
                "\(server)\(via) does not speak TLS on port \(port); if it serves plain HTTP there, use an http:// URL, else check the port."
        }
    }

    static func wrongHost(server: String, host: String, facts: CertificateFacts?, via: String) -> String {
        let names = facts.map { $0.names.isEmpty ? ($0.subject ?? "no name") : $0.names.joined(separator: ", ") }
        let listed = names.map { " it is for \($0), not \(host)" } ?? " it does not name \(host)"
        return
            "The TLS certificate of \(server)\(via) is for another host:\(listed). Use a host name the certificate names in the URL, or fix the server's certificate."
    }
}
