import NIOSSL

#if canImport(Glibc)
import Glibc
#endif

extension TLSSettings {
    /// The largest certificate or key file read (a CA bundle of the whole web is about 220 KiB).
    static let maxFileBytes = 4 << 20
    /// The most files read from a `--capath` directory.
    static let maxDirectoryFiles = 4096

    /// Reads the files a download names, with `identity`'s rights (the daemon passes the asking user's, so
    /// it can never be made to read a file that user may not), and checks them now rather than at the
    /// first handshake: `caFile` and the PEM files of `caPath` become the only trusted CAs; without them,
    /// `extraTrust` (the daemon's bundle) is added to the system store; `certFile` and `keyFile` come
    /// together. `names` gives the option names for messages (`--cacert` or `ca_file`).
    public static func load(
        caFile: String? = nil, caPath: String? = nil, certFile: String? = nil, keyFile: String? = nil,
        extraTrust: CABundle = .none, identity: FileIdentity? = nil, names: OptionNames = .commandLine
    ) throws(TransferError) -> TLSSettings {
        var settings = TLSSettings()
        if caFile != nil || caPath != nil {
            var roots: [NIOSSLCertificate] = []
            var origins: [String] = []
            if let caFile {
                let certificates = try certificates(in: readFile(caFile, option: names.caFile, identity: identity))
                guard !certificates.isEmpty else {
                    throw TransferError(
                        .tlsSetup,
                        "\(names.caFile) \(caFile) holds no PEM certificate (-----BEGIN CERTIFICATE-----); give the CA's certificate in PEM form."
                    )
                }
                roots += certificates
                origins.append("\(names.caFile) \(caFile)")
            }
            if let caPath {
                let certificates = try directoryCertificates(caPath, option: names.caPath, identity: identity)
                guard !certificates.isEmpty else {
                    throw TransferError(
                        .tlsSetup,
                        "\(names.caPath) \(caPath) holds no PEM certificate file; put the CA certificates there in PEM form."
                    )
                }
                roots += certificates
                origins.append("\(names.caPath) \(caPath)")
            }
            settings.trust = .only(roots)
            settings.trustOrigin = origins.joined(separator: " and ")
        } else if !extraTrust.certificates.isEmpty {
            settings.trust = .systemAnd(extraTrust.certificates)
        }
        switch (certFile, keyFile) {
        case (nil, nil):
            break
        case (let cert?, let key?):
            let chain = try certificates(in: readFile(cert, option: names.certFile, identity: identity))
            guard !chain.isEmpty else {
                throw TransferError(
                    .tlsSetup,
                    "\(names.certFile) \(cert) holds no PEM certificate; give the client certificate in PEM form.")
            }
            let keyBytes = try readFile(key, option: names.keyFile, identity: identity)
            let privateKey: NIOSSLPrivateKey
            do {
                privateKey = try NIOSSLPrivateKey(bytes: keyBytes, format: .pem)
            } catch {
                throw TransferError(
                    .tlsSetup,
                    "\(names.keyFile) \(key) is not an unencrypted PEM private key; an encrypted one must be decrypted first (openssl pkey -in KEY -out KEY.plain), and chmod 600 it."
                )
            }
            settings.clientChain = chain
            settings.clientKey = privateKey
            settings.clientOrigin = "\(names.certFile) \(cert)"
        case (_?, nil):
            throw TransferError(
                .tlsSetup, "\(names.certFile) needs \(names.keyFile) too: the client certificate's private key.")
        case (nil, _?):
            throw TransferError(
                .tlsSetup, "\(names.keyFile) needs \(names.certFile) too: the client certificate for that key.")
        }
        // Builds the context once, so a key that does not belong to its certificate is said now (not for
        // the default settings: a context loads the system's CA store, and `add` checks every job).
        guard settings.hasClientCertificate else { return settings }
        do {
            _ = try NIOSSLContext(configuration: settings.configuration)
        } catch {
            throw TransferError(
                .tlsSetup,
                "\(names.keyFile) \(keyFile ?? "") is not the private key of \(names.certFile) \(certFile ?? ""); give the key that belongs to that certificate."
            )
        }
        return settings
    }

    /// The option names used in messages: the command line's or the API's.
    public struct OptionNames: Sendable {
        public var caFile: String
        public var caPath: String
        public var certFile: String
        public var keyFile: String

        public static let commandLine = OptionNames(
            caFile: "--cacert", caPath: "--capath", certFile: "--cert", keyFile: "--key")
        public static let api = OptionNames(
            caFile: "ca_file", caPath: "ca_path", certFile: "cert_file", keyFile: "key_file")
    }

    static func certificates(in bytes: [UInt8]) throws(TransferError) -> [NIOSSLCertificate] {
        guard bytes.contains(UInt8(ascii: "-")) else { return [] }
        do {
            return try NIOSSLCertificate.fromPEMBytes(bytes)
        } catch {
            return []
        }
    }

    /// A regular file's bytes, read with `identity`'s rights.
    static func readFile(_ path: String, option: String, identity: FileIdentity?) throws(TransferError) -> [UInt8] {
        try identity.perform { () throws(TransferError) -> [UInt8] in
            let flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK
            // For another user (the daemon), never a name looked up in /proc: /proc/self/fd/N is the daemon's.
            let opened: Result<Int32, KernelTreeFreePath.Failure>
            if identity == nil {
                let fd = open(path, flags)
                opened = fd >= 0 ? .success(fd) : .failure(.errno(errno))
            } else {
                opened = KernelTreeFreePath.open(path, flags: flags)
            }
            let fd: Int32
            switch opened {
            case .success(let descriptor):
                fd = descriptor
            case .failure(.procfs):
                throw TransferError(.tlsSetup, "\(option) \(path) leads into /proc; give a PEM file of your own.")
            case .failure(.errno(let code)):
                let reason = FailureText.errnoText(code)
                throw TransferError(
                    .tlsSetup, "\(option) \(path) cannot be read as uid \(identity.ownerUID): \(reason).")
            }
            defer { close(fd) }
            return try readAll(fd, path: path, option: option)
        }
    }

    private static func readAll(_ fd: Int32, path: String, option: String) throws(TransferError) -> [UInt8] {
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw TransferError(.tlsSetup, "\(option) \(path) is not a regular file; give a PEM file.")
        }
        guard info.st_size <= maxFileBytes else {
            throw TransferError(
                .tlsSetup, "\(option) \(path) is larger than \(maxFileBytes >> 20) MiB; give a PEM file.")
        }
        // One byte past the limit: a file that grew after fstat is still caught.
        guard let bytes = FileIO.readAll(fd: fd, limit: maxFileBytes + 1) else {
            throw TransferError(.tlsSetup, "\(option) \(path) cannot be read: \(FailureText.errnoText(errno)).")
        }
        guard bytes.count <= maxFileBytes else {
            throw TransferError(
                .tlsSetup, "\(option) \(path) is larger than \(maxFileBytes >> 20) MiB; give a PEM file.")
        }
        return bytes
    }

    /// The certificates of every regular PEM file in `path` (as `c_rehash` directories hold them; other
    /// files are skipped), read with `identity`'s rights.
    static func directoryCertificates(_ path: String, option: String, identity: FileIdentity?) throws(TransferError)
        -> [NIOSSLCertificate]
    {
        try identity.perform { () throws(TransferError) -> [NIOSSLCertificate] in
            let dirFD = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard dirFD >= 0 else {
                throw TransferError(
                    .tlsSetup,
                    "\(option) \(path) cannot be opened as a directory as uid \(identity.ownerUID): \(FailureText.errnoText(errno))."
                )
            }
            guard let dir = fdopendir(dirFD) else {
                close(dirFD)
                throw TransferError(.tlsSetup, "\(option) \(path) cannot be listed: \(FailureText.errnoText(errno)).")
            }
            defer { closedir(dir) }
            var found: [NIOSSLCertificate] = []
            var seen = 0
            while let entry = readdir(dir), seen < maxDirectoryFiles {
                let name = withUnsafeBytes(of: entry.pointee.d_name) {
                    String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
                }
                if name.hasPrefix(".") { continue }
                seen += 1
                let fd = openat(dirFD, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
                guard fd >= 0 else { continue }
                defer { close(fd) }
                guard let bytes = try? readAll(fd, path: path + "/" + name, option: option) else { continue }
                found += try certificates(in: bytes)
            }
            return found
        }
    }
}
