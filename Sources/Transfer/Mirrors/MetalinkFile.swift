#if canImport(Glibc)
import Glibc
#endif

extension Metalink {
    /// A local Metalink file's bytes: a regular file of at most `Metalink.maxBytes`, opened without blocking
    /// (a FIFO is refused, not waited on).
    public static func readFile(atPath path: String) throws(TransferError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            throw TransferError(
                errno == EACCES || errno == EPERM ? .permission : .metalink,
                "Could not open the Metalink file \(path): \(String(cString: strerror(errno))).")
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            throw TransferError(.metalink, "\(path) is not a regular file; give the .meta4 file's path.")
        }
        guard st.st_size <= Metalink.maxBytes, let bytes = FileIO.readAll(fd: fd, limit: Metalink.maxBytes + 1),
            bytes.count <= Metalink.maxBytes
        else {
            throw TransferError(
                .metalink,
                "\(path) is larger than \(Metalink.maxBytes >> 20) MiB, or unreadable; it is not a Metalink file.")
        }
        return bytes
    }
}
