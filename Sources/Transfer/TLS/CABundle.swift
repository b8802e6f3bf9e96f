import NIOSSL

/// CA certificates a daemon trusts for every job besides the system's store (`daemon --ca-file`), read
/// once at start with the daemon's own rights: the administrator's file, not a user's.
public struct CABundle: Sendable {
    let certificates: [NIOSSLCertificate]

    /// No extra CA.
    public static let none = CABundle(certificates: [])

    /// How many certificates the bundle holds.
    public var count: Int { certificates.count }

    init(certificates: [NIOSSLCertificate]) {
        self.certificates = certificates
    }

    /// The certificates of the PEM file at `path`; an unreadable file or one without a certificate is an
    /// error that names the file.
    public static func load(_ path: String) throws(TransferError) -> CABundle {
        let list = try TLSSettings.certificates(in: TLSSettings.readFile(path, option: "--ca-file", identity: nil))
        guard !list.isEmpty else {
            throw TransferError(
                .tlsSetup, "--ca-file \(path) holds no PEM certificate; give the CA bundle in PEM form.")
        }
        return CABundle(certificates: list)
    }
}
