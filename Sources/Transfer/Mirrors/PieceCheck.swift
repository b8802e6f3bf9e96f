import Crypto

#if canImport(Glibc)
import Glibc
#endif

/// What a piece of the partial file is checked against: its Metalink hash, or, without one, the CRC-32C the
/// run recorded when it wrote the piece (it finds torn or stale data after a crash, like the single-source
/// checkpoint's chunks).
enum PieceCheck: Sendable {
    case hashes(Metalink.Pieces)
    case crc32c

    var name: String {
        switch self {
        case .hashes(let pieces): return pieces.kind.rawValue
        case .crc32c: return "crc32c"
        }
    }

    /// The digest of `range` of `fd` in this check's kind (for `.crc32c` the 4 bytes of the CRC, big-endian).
    func digest(fd: Int32, range: Range<Int64>) -> [UInt8]? {
        switch self {
        case .hashes(let pieces):
            switch pieces.kind {
            case .sha256:
                var hash = SHA256()
                guard Self.read(fd: fd, range: range, into: { hash.update(bufferPointer: $0) }) else { return nil }
                return Array(hash.finalize())
            case .sha1:
                var hash = Insecure.SHA1()
                guard Self.read(fd: fd, range: range, into: { hash.update(bufferPointer: $0) }) else { return nil }
                return Array(hash.finalize())
            }
        case .crc32c:
            var crc = CRC32C()
            guard Self.read(fd: fd, range: range, into: { crc.update($0) }) else { return nil }
            return withUnsafeBytes(of: crc.value.bigEndian) { Array($0) }
        }
    }

    /// Whether piece `piece` (at `range`) holds the bytes its hash names; `.crc32c` has nothing to check a new
    /// piece against and passes.
    func matches(fd: Int32, piece: Int, range: Range<Int64>) -> Bool {
        guard case .hashes = self else { return true }
        return matches(piece: piece, digest: digest(fd: fd, range: range))
    }

    /// Whether `digest`, taken of piece `piece`, is the one its hash names (`.crc32c`: always).
    func matches(piece: Int, digest: [UInt8]?) -> Bool {
        guard case .hashes(let pieces) = self else { return true }
        guard piece < pieces.hashes.count, let digest else { return false }
        return digest == pieces.hashes[piece]
    }

    /// The CRC-32C of `range` of `fd`; nil when the file is shorter or unreadable.
    static func crc32c(fd: Int32, range: Range<Int64>) -> UInt32? {
        var crc = CRC32C()
        guard read(fd: fd, range: range, into: { crc.update($0) }) else { return nil }
        return crc.value
    }

    /// Feeds `range` of `fd` to `body` 1 MiB at a time; false when the file is shorter or unreadable.
    static func read(fd: Int32, range: Range<Int64>, into body: (UnsafeRawBufferPointer) -> Void) -> Bool {
        let size = Int(min(1 << 20, max(1, range.count)))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
        defer { buffer.deallocate() }
        var at = range.lowerBound
        while at < range.upperBound {
            let want = Int(min(Int64(size), range.upperBound - at))
            let n = FileIO.preadFully(fd: fd, UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]), at: at)
            guard n == want else { return false }
            body(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            at += Int64(n)
        }
        return true
    }
}
