import NIOSSL

/// Whom a download trusts over https and which certificate it shows: the system's CA store by default;
/// `--cacert` / `--capath` (a job's `ca_file`) trust only the CAs given, as curl does; a daemon-wide bundle
/// is added to the system store; `--cert` / `--key` present a client certificate (mTLS). Certificates are
/// held parsed, so the daemon reads the files once, with the asking user's rights, and never again as
/// itself (`TLSSettings.load`).
public struct TLSSettings: Sendable {
    /// Which CAs verify the server.
    public enum Trust: Sendable {
        /// The system's CA store.
        case system
        /// The system's store and these CAs besides (the daemon's default bundle).
        case systemAnd([NIOSSLCertificate])
        /// These CAs only.
        case only([NIOSSLCertificate])
    }

    public var trust: Trust
    /// The client certificate chain, leaf first; empty for none.
    public var clientChain: [NIOSSLCertificate]
    public var clientKey: NIOSSLPrivateKey?
    /// Where the trust came from, for messages (`--cacert ca.pem`); nil for the system store.
    public var trustOrigin: String?
    /// Where the client certificate came from, for messages.
    public var clientOrigin: String?

    public init(
        trust: Trust = .system, clientChain: [NIOSSLCertificate] = [], clientKey: NIOSSLPrivateKey? = nil,
        trustOrigin: String? = nil, clientOrigin: String? = nil
    ) {
        self.trust = trust
        self.clientChain = clientChain
        self.clientKey = clientKey
        self.trustOrigin = trustOrigin
        self.clientOrigin = clientOrigin
    }

    /// The system store, no client certificate.
    public static let system = TLSSettings()

    /// Whether a client certificate is presented.
    public var hasClientCertificate: Bool { clientKey != nil && !clientChain.isEmpty }

    /// The client TLS configuration: full verification (host name included), TLS 1.2 or newer.
    public var configuration: TLSConfiguration {
        var c = TLSConfiguration.makeClientConfiguration()
        c.minimumTLSVersion = .tlsv12
        c.certificateVerification = .fullVerification
        // A connection is only ever closed by us when we are done with it (a completed download's pool, a
        // pause, a cancel, a failed answer): nothing more is wanted from it, so the close sends close_notify and
        // ends the connection at once. Waiting for the peer's close_notify (NIOSSL's default: up to 5 s) hung
        // every such close on a server blocked on a full window, and read on meanwhile. Truncation is still
        // caught: it is the server's close without close_notify, and a body short of its length.
        c.shutdownTimeout = .zero
        switch trust {
        case .system:
            break
        case .systemAnd(let extra):
            c.additionalTrustRoots = [.certificates(extra)]
        case .only(let roots):
            c.trustRoots = .certificates(roots)
        }
        if let clientKey, !clientChain.isEmpty {
            c.certificateChain = clientChain.map { .certificate($0) }
            c.privateKey = .privateKey(clientKey)
        }
        return c
    }
}
