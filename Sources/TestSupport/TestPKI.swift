import Foundation
import NIOSSL

/// A throwaway PKI made by `Tests/pki/make-pki.sh` with openssl for one test run: a CA no system trusts
/// and the certificates it signed (server, expired, future, wronghost, client), plus a second CA. Remove it
/// with `remove()`.
public final class TestPKI: Sendable {
    /// The directory holding `NAME.crt` and `NAME.key`.
    public let directory: String

    /// Why TLS tests cannot run here, or nil when they can.
    public static var unavailableReason: String? {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl")
            ? nil : "openssl is not installed (apt-get install openssl; CI installs it)"
    }

    /// Makes the PKI in a new temporary directory.
    public init() throws {
        directory = NSTemporaryDirectory() + "meterwise-pki-\(UInt32.random(in: 0...UInt32.max))"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [RepoPaths.file("Tests/pki/make-pki.sh"), directory]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw NginxError(message: "make-pki.sh failed (\(process.terminationStatus)): \(text)")
        }
        // Readable by other users (the security tests act as nobody); the keys are test-only.
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            chmod(directory + "/" + name, 0o644)
        }
        chmod(directory, 0o755)
    }

    /// The path of `NAME.crt` or `NAME.key`.
    public func path(_ name: String) -> String { directory + "/" + name }

    /// A server configuration presenting `NAME.crt`; with `clientCA`, client certificates signed by it are
    /// required (mTLS).
    public func serverTLS(_ name: String = "server", requireClientCertificate: Bool = false) throws -> TLSConfiguration
    {
        var c = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(path(name + ".crt")).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: path(name + ".key"), format: .pem)))
        // Explicit roots: the system's default store is not the test's business (and is not needed to serve).
        c.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(path("ca.crt")))
        if requireClientCertificate {
            c.certificateVerification = .noHostnameVerification
        }
        return c
    }

    /// Deletes the directory.
    public func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }
}
