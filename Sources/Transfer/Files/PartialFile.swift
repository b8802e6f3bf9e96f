import Crypto
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The `.part` file and the CRC-32C of every chunk as it is written.
///
/// Confined to the `FileWriter` queue once the download runs (hence `@unchecked Sendable`): every
/// method is called from one thread at a time.
final class PartialFile: @unchecked Sendable {
    enum ChunkState {
        case filling(filled: Int64, crc: CRC32C)
        case done(length: Int64, crc: CRC32C)
    }

    let path: String
    let fd: Int32
    let chunkSize: Int64
    private(set) var total: Int64?
    private var chunks: [Int64: ChunkState] = [:]
    /// The whole-file sha256 of the verified pieces that start at 0 and follow each other: the seed
    /// of the `StreamDigest`.
    private(set) var frontier: Int64 = 0
    private(set) var fullHasher = SHA256()
    /// Whether the whole-file sha256 is wanted: `verify` then seeds it from the verified pieces.
    let digests: Bool

    /// Takes over `fd`, the partial file opened for reading and writing (and locked); `truncate` empties it.
    init(fd: Int32, path: String, chunkSize: Int64, total: Int64?, truncate: Bool, digests: Bool) throws(TransferError)
    {
        if truncate && ftruncate(fd, 0) != 0 {
            let error = FileIO.error("truncate the partial file \(path)")
            close(fd)
            throw error
        }
        self.path = path
        self.chunkSize = chunkSize
        self.total = total
        self.fd = fd
        self.digests = digests
    }

    deinit { close(fd) }

    func setTotal(_ total: Int64?) {
        self.total = total
        guard let total else { return }
        for (index, state) in chunks {
            if case .filling(let filled, let crc) = state, index * chunkSize + filled == total, filled > 0 {
                chunks[index] = .done(length: filled, crc: crc)
            }
        }
    }

    func chunkLength(_ index: Int64) -> Int64 {
        let start = index * chunkSize
        guard let total else { return chunkSize }
        return max(0, min(chunkSize, total - start))
    }

    /// Empties the file and forgets every chunk (restart from 0).
    func reset(total: Int64?) throws(TransferError) {
        guard ftruncate(fd, 0) == 0 else { throw FileIO.error("truncate the partial file \(path)") }
        chunks = [:]
        frontier = 0
        fullHasher = SHA256()
        self.total = total
    }

    /// Checks the checkpoint's pieces against the file; keeps those whose checksum matches (CRC-32C, or
    /// the sha256 of a version 1 checkpoint) and returns them (the others are damaged and will be fetched
    /// again). The chunks kept go on with a CRC-32C either way.
    func verify(_ pieces: [Checkpoint.Piece]) -> [Checkpoint.Piece] {
        var good: [Checkpoint.Piece] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        for piece in pieces.sorted(by: { $0.offset < $1.offset }) where piece.offset % chunkSize == 0 {
            let index = piece.offset / chunkSize
            guard piece.length <= chunkLength(index), chunks[index] == nil, let expected = PieceChecksum(piece) else {
                continue
            }
            var reader = PieceChecksum.Reader(for: expected)
            var at = piece.offset
            var ok = true
            let inOrder = digests && piece.offset == frontier
            var full = fullHasher
            while at < piece.offset + piece.length {
                let want = Int(min(Int64(buffer.count), piece.offset + piece.length - at))
                let n = buffer.withUnsafeMutableBytes {
                    FileIO.preadFully(fd: fd, UnsafeMutableRawBufferPointer(rebasing: $0[0..<want]), at: at)
                }
                if n != want {
                    ok = false
                    break
                }
                buffer.withUnsafeBytes {
                    let slice = UnsafeRawBufferPointer(rebasing: $0[0..<n])
                    reader.update(slice)
                    if inOrder { full.update(bufferPointer: slice) }
                }
                at += Int64(n)
            }
            guard ok else { continue }
            guard reader.matches(expected) else { continue }
            if piece.length == chunkLength(index) {
                chunks[index] = .done(length: piece.length, crc: reader.crc)
            } else {
                chunks[index] = .filling(filled: piece.length, crc: reader.crc)
            }
            if inOrder {
                fullHasher = full
                frontier += piece.length
            }
            good.append(piece)
        }
        return good
    }

    /// Writes `buffer` at `offset` and feeds the chunk checksums.
    func write(_ buffer: ByteBuffer, at offset: Int64) throws(TransferError) {
        let failure = buffer.withUnsafeReadableBytes { (raw: UnsafeRawBufferPointer) -> TransferError? in
            do throws(TransferError) {
                try FileIO.pwriteAll(fd: fd, raw, at: offset, what: "write to the partial file \(path)")
            } catch {
                return error
            }
            hash(raw, at: offset)
            return nil
        }
        if let failure { throw failure }
    }

    private func hash(_ raw: UnsafeRawBufferPointer, at offset: Int64) {
        var at = offset
        var rest = raw[...]
        while !rest.isEmpty {
            let index = at / chunkSize
            let start = index * chunkSize
            let take = Int(min(Int64(rest.count), start + chunkSize - at))
            let slice = UnsafeRawBufferPointer(rebasing: rest.prefix(take))
            var filled: Int64 = 0
            var crc = CRC32C()
            switch chunks[index] {
            case .filling(let f, let c):
                filled = f
                crc = c
            case .done, nil:
                break
            }
            if start + filled != at {
                // Not a continuation of what this chunk holds (data was re-sent): restart its checksum
                // only when the write starts the chunk; otherwise forget it so no checkpoint claims it.
                filled = 0
                crc = CRC32C()
                if at != start {
                    chunks[index] = nil
                    at += Int64(take)
                    rest = rest.dropFirst(take)
                    continue
                }
            }
            crc.update(slice)
            filled += Int64(take)
            if filled == chunkLength(index) {
                chunks[index] = .done(length: filled, crc: crc)
            } else {
                chunks[index] = .filling(filled: filled, crc: crc)
            }
            at += Int64(take)
            rest = rest.dropFirst(take)
        }
    }

    /// The verified pieces to record in a checkpoint (call after `sync`).
    func pieces() -> [Checkpoint.Piece] {
        chunks.keys.sorted().compactMap { index in
            switch chunks[index]! {
            case .done(let length, let crc):
                return Checkpoint.Piece(offset: index * chunkSize, length: length, crc32c: crc.hex)
            case .filling(let filled, let crc):
                guard filled > 0 else { return nil }
                return Checkpoint.Piece(offset: index * chunkSize, length: filled, crc32c: crc.hex)
            }
        }
    }

    /// Bytes covered by chunk states.
    var bytesHeld: Int64 {
        chunks.values.reduce(0) { sum, state in
            switch state {
            case .done(let length, _): return sum + length
            case .filling(let filled, _): return sum + filled
            }
        }
    }

    /// fdatasync (the data and the size, not the times); only touches the descriptor, so the checkpoint
    /// thread may call it while writes go on.
    func sync() throws(TransferError) {
        guard fdatasync(fd) == 0 else { throw FileIO.error("fdatasync the partial file \(path)") }
    }

    var size: Int64 { FileIO.size(fd: fd) ?? 0 }

}

extension Sequence where Element == UInt8 {
    /// Lower-case hex.
    var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for b in self {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xf)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
