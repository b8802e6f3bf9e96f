import ArgumentParser
import Transfer

#if canImport(Glibc)
import Glibc
#endif

/// The sources of one file beyond its URL, for `get` (docs/mirrors.md): more URLs, `--mirror`, and a
/// Metalink file.
struct MirrorOptions: ParsableArguments {
    @Option(
        name: .customLong("mirror"),
        help: ArgumentHelp("Another URL of the same file (may be repeated; so may URLs).", valueName: "url"))
    var mirrors: [String] = []

    @Option(
        help: ArgumentHelp(
            "A Metalink file (.meta4, or v3 .metalink), a path or a URL: its URLs, size, hashes and piece hashes.",
            valueName: "file|url"))
    var metalink: String?

    /// Whether `metalink` names a URL to fetch rather than a file.
    var metalinkIsRemote: Bool {
        guard let metalink else { return false }
        let lower = metalink.lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }

    /// The file name a Metalink URL suggests: its last path part without `.meta4` or `.metalink`.
    var metalinkURLName: String? {
        guard metalinkIsRemote, let metalink, var name = OutputName.from(url: metalink) else { return nil }
        for suffix in [".meta4", ".metalink"] where name.hasSuffix(suffix) && name.count > suffix.count {
            name.removeLast(suffix.count)
            return name
        }
        return nil
    }

    /// The set for `urls` and these options; nil for a download from one URL without a Metalink file.
    /// A local Metalink file is read here, with the user's own rights.
    func mirrorSet(urls: [String]) throws(TransferError) -> (set: MirrorSet, name: String?)? {
        let given = urls + mirrors
        guard let metalink else {
            guard given.count > 1 else { return nil }
            return (MirrorSet(sources: given.map { MirrorSet.Source(url: $0) }), nil)
        }
        if metalinkIsRemote {
            return (MirrorSet(sources: given.map { MirrorSet.Source(url: $0) }, metalinkURL: metalink), metalinkURLName)
        }
        let parsed = try Metalink.parse(try Self.readFile(metalink), source: metalink)
        guard let file = parsed.files.first else { throw TransferError(.metalink, "\(metalink) describes no file.") }
        return (MirrorSet(file: file, extra: given), file.name)
    }

    /// A local Metalink file's bytes: a regular file of at most `Metalink.maxBytes`.
    static func readFile(_ path: String) throws(TransferError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            throw TransferError(
                .metalink, "Could not open the Metalink file \(path): \(String(cString: strerror(errno))).")
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            throw TransferError(.metalink, "\(path) is not a regular file; give the .meta4 file's path.")
        }
        guard st.st_size <= Metalink.maxBytes else {
            throw TransferError(
                .metalink, "\(path) is larger than \(Metalink.maxBytes >> 20) MiB; it is not a Metalink file.")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while bytes.count <= Metalink.maxBytes {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else {
                throw TransferError(
                    .metalink, "Could not read the Metalink file \(path): \(String(cString: strerror(errno))).")
            }
            if n == 0 { break }
            bytes += chunk[0..<n]
        }
        guard bytes.count <= Metalink.maxBytes else {
            throw TransferError(
                .metalink, "\(path) is larger than \(Metalink.maxBytes >> 20) MiB; it is not a Metalink file.")
        }
        return bytes
    }
}
