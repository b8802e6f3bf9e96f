import Crypto
import NIOCore

/// The whole-file sha256, fed with the data that arrives in order (`offset == frontier`) on its own
/// thread, so it runs in parallel with the writer's chunk hashes (the bench's profile: hashing is
/// most of the CPU). What did not arrive in order is read back from the file at the end.
///
/// Confined to `FileWriter`'s digest queue (hence `@unchecked Sendable`).
final class StreamDigest: @unchecked Sendable {
    private(set) var frontier: Int64 = 0
    private var hasher = SHA256()

    init(frontier: Int64 = 0, hasher: SHA256 = SHA256()) {
        self.frontier = frontier
        self.hasher = hasher
    }

    func feed(_ buffer: ByteBuffer, at offset: Int64) {
        guard offset == frontier else { return }
        buffer.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
        frontier += Int64(buffer.readableBytes)
    }

    func reset() {
        frontier = 0
        hasher = SHA256()
    }

    /// The sha256 of the file's first `total` bytes: the in-order hash, then the rest read from `fd`.
    func finalize(fd: Int32, total: Int64) -> String {
        var hasher = self.hasher
        var at = frontier
        // 256 KiB reads: as fast as larger ones from the page cache, and a quarter of the memory touched.
        var buffer = [UInt8](repeating: 0, count: 256 << 10)
        while at < total {
            let want = Int(min(Int64(buffer.count), total - at))
            let n = buffer.withUnsafeMutableBytes {
                FileIO.preadFully(fd: fd, UnsafeMutableRawBufferPointer(rebasing: $0[0..<want]), at: at)
            }
            guard n > 0 else { break }
            buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            at += Int64(n)
        }
        return hasher.finalize().hex
    }
}
