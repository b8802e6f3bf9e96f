#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The check of a destination before a download is queued for someone: the daemon runs as root, so
/// "may this user write there?" is answered with the user's rights, not the daemon's.
public enum DestinationCheck {
    /// Checks that `identity` may create `destination` (an absolute path): its directory exists and is
    /// writable by them, and nothing has its name yet. Returns the path with the directory resolved once
    /// (symlinks and `..` followed as the user may follow them), so two spellings of one place are one
    /// destination. With `replacing`, something there already is allowed: a delta job's older version, which the
    /// new one replaces (docs/delta.md).
    public static func resolve(_ destination: String, identity: FileIdentity?, replacing: Bool = false)
        throws(TransferError) -> String
    {
        let name = FileIO.name(of: destination)
        guard !name.isEmpty, name != ".", name != ".." else {
            throw TransferError(
                .invalidURL, "\(destination) names a directory; give a file name, e.g. \(destination)/file.iso")
        }
        let directory = try OutputDirectory.open(holding: destination, identity: identity)
        try directory.checkWritable()
        let resolved = Self.path(of: directory) ?? directory.path
        let path = resolved == "/" ? "/" + name : resolved + "/" + name
        if !replacing, directory.exists(name) {
            throw TransferError(.destinationExists, "\(path) exists already: remove it or choose another -o")
        }
        return path
    }

    /// The directory's path as the kernel resolved it when it was opened.
    static func path(of directory: OutputDirectory) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/fd/\(directory.fd)", &buffer, buffer.count - 1)
        guard n > 0, buffer[0] == UInt8(ascii: "/") else { return nil }
        let path = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return path.hasSuffix(" (deleted)") ? nil : path
    }
}
