import Testing

@testable import Transfer

/// Reading a TLS library error as what it means, and the sentence each failure gets.
struct TLSFailureTests {
    @Test(arguments: [
        (
            "handshakeFailed(sslError([Error: 268435581 error:1000007d:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED]))",
            TLSFailure.serverCertificate
        ),
        (
            "sslError([error:1000045c:SSL routines:OPENSSL_internal:TLSV1_ALERT_CERTIFICATE_REQUIRED])",
            .clientCertificateRequired
        ),
        (
            "sslError([error:10000418:SSL routines:OPENSSL_internal:TLSV1_ALERT_UNKNOWN_CA])",
            .clientCertificateRefused("TLS alert: unknown CA")
        ),
        (
            "sslError([error:10000412:SSL routines:OPENSSL_internal:SSLV3_ALERT_BAD_CERTIFICATE])",
            .clientCertificateRefused("TLS alert: bad certificate")
        ),
        ("handshakeFailed(sslError([error:1000010b:SSL routines:OPENSSL_internal:WRONG_VERSION_NUMBER]))", .notTLS),
        (
            "handshakeFailed(sslError([error:10000410:SSL routines:OPENSSL_internal:SSLV3_ALERT_HANDSHAKE_FAILURE]))",
            .handshakeRefused("SSLV3 handshake failure")
        ),
    ])
    func classifiesTheLibrarysReasons(text: String, expected: TLSFailure) {
        let got = TLSFailure.classify(text: text)
        if case .handshakeRefused = expected, case .handshakeRefused? = got { return }
        #expect(got == expected)
    }

    @Test func otherErrorsAreNotTLSFailures() {
        #expect(TLSFailure.classify(text: "connection reset by peer (errno: 104)") == nil)
        struct Other: Error {}
        #expect(TLSFailure.classify(Other()) == nil)
    }

    static let facts = CertificateFacts(
        notBefore: 1_577_836_800, notAfter: 1_580_515_200, names: ["127.0.0.1", "localhost"], subject: "127.0.0.1",
        issuer: "Meterwise Test CA")

    @Test func factsTellWhatIsWrong() {
        let inside: Int64 = 1_578_000_000
        #expect(Self.facts.problem(host: "127.0.0.1", now: inside) == nil)
        #expect(Self.facts.problem(host: "localhost", now: inside) == nil)
        #expect(Self.facts.problem(host: "other.example", now: inside) == .otherHost)
        #expect(Self.facts.problem(host: "127.0.0.1", now: 1_700_000_000) == .expired)
        #expect(Self.facts.problem(host: "127.0.0.1", now: 1_000_000_000) == .notYetValid)
        let wildcard = CertificateFacts(
            notBefore: 0, notAfter: .max, names: ["*.example.com"], subject: nil, issuer: nil)
        #expect(wildcard.matches(host: "www.example.com"))
        #expect(!wildcard.matches(host: "example.com"))
        #expect(!wildcard.matches(host: "a.b.example.com"))
    }

    @Test(arguments: [
        (
            Int64(1_578_000_000), "127.0.0.1",
            ["issued by \"Meterwise Test CA\"", "--cacert", "update-ca-certificates", "127.0.0.1:8443"]
        ),
        (Int64(1_700_000_000), "127.0.0.1", ["expired on 2020-02-01 00:00 UTC", "clock says"]),
        (Int64(1_000_000_000), "127.0.0.1", ["valid only from 2020-01-01", "timedatectl"]),
        (Int64(1_578_000_000), "files.example", ["is for 127.0.0.1, localhost, not files.example"]),
    ])
    func messagesNameTheCauseTheHostAndTheFix(now: Int64, host: String, fragments: [String]) {
        let text = TLSFailureText.message(
            .serverCertificate, host: host, port: 8443, facts: Self.facts, settings: .system, proxy: nil, now: now)
        for fragment in fragments { #expect(text.contains(fragment), "\(text)") }
        #expect(!text.contains("NIOSSL") && !text.contains("BoringSSL") && !text.contains(".build"))
    }

    @Test func clientCertificateMessagesSayWhichOptions() {
        let text = TLSFailureText.message(
            .clientCertificateRequired, host: "updates.corp", port: 443, facts: nil, settings: .system, proxy: nil,
            now: 0)
        #expect(text.contains("updates.corp requires a client certificate"))
        #expect(text.contains("--cert") && text.contains("--key"))
    }
}
