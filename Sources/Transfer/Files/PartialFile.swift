import Crypto
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The `.part` file and the CRC-32C of every run of bytes as it is written.
///
/// A run is bytes written in order from where a writer started, within one chunk: a chunk normally holds one,
/// and one more for each gap left where a segment took over the rest of another's range inside it (a cut into
/// a request too slow to wait for, `RangePlan.assign`); runs that meet are joined. Each run is a checkpoint
/// piece of its own, so a chunk written by two segments is kept across a pause or a crash like any other.
///
/// Confined to the `FileWriter` queue once the download runs (hence `@unchecked Sendable`): every
/// method is called from one thread at a time.
final class PartialFile: @unchecked Sendable {
    /// Bytes written in order from `start` by one writer, and their CRC-32C.
    struct Run {
        var start: Int64
        var filled: Int64
        var crc: CRC32C
        var end: Int64 { start + filled }
    }

    /// The most runs of one chunk a checkpoint keeps (`ObjectLimits.piecesPerChunk`); the bytes of more are
    /// fetched again after a resume. Runs that meet are joined, so a chunk holds more only while it has more
    /// gaps than that.
    static let runsPerChunk = Int(ObjectLimits.piecesPerChunk)

    let path: String
    let fd: Int32
    let chunkSize: Int64
    private(set) var total: Int64?
    /// The runs of each chunk, by chunk index; none overlaps another.
    private var chunks: [Int64: [Run]] = [:]
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

    func setTotal(_ total: Int64?) { self.total = total }

    func chunkLength(_ index: Int64) -> Int64 {
        let start = index * chunkSize
        guard let total else { return chunkSize }
        return max(0, min(chunkSize, total - start))
    }

    /// Empties the file and forgets every run (restart from 0).
    func reset(total: Int64?) throws(TransferError) {
        guard ftruncate(fd, 0) == 0 else { throw FileIO.error("truncate the partial file \(path)") }
        chunks = [:]
        frontier = 0
        fullHasher = SHA256()
        self.total = total
    }

    /// Checks the checkpoint's pieces against the file; keeps those whose checksum matches (CRC-32C, or
    /// the sha256 of a version 1 checkpoint) and returns them (the others are damaged and will be fetched
    /// again). A piece must lie within one chunk and not overlap one kept before it, so no byte of the file
    /// is read twice whatever the checkpoint says. The runs kept go on with a CRC-32C either way.
    /// `stop` is asked before each megabyte read: true ends the check and returns nil (a pause or a cancel while a
    /// large partial file is read), and the caller must not write a checkpoint from what was kept so far.
    func verify(_ pieces: [Checkpoint.Piece], stop: () -> Bool = { false }) -> [Checkpoint.Piece]? {
        var good: [Checkpoint.Piece] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var checked: Int64 = 0
        for piece in pieces.sorted(by: { $0.offset < $1.offset }) where piece.offset >= checked && piece.length > 0 {
            let index = piece.offset / chunkSize
            guard piece.offset + piece.length <= index * chunkSize + chunkLength(index),
                (chunks[index]?.count ?? 0) < Self.runsPerChunk, let expected = PieceChecksum(piece)
            else { continue }
            var reader = PieceChecksum.Reader(for: expected)
            var at = piece.offset
            var ok = true
            let inOrder = digests && piece.offset == frontier
            var full = fullHasher
            while at < piece.offset + piece.length {
                if stop() { return nil }
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
            checked = piece.offset + piece.length
            guard ok, reader.matches(expected) else { continue }
            chunks[index, default: []].append(Run(start: piece.offset, filled: piece.length, crc: reader.crc))
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

    /// Feeds the runs with `raw`, written at `offset`: it continues the run that ends where it starts, or
    /// starts a new one; a run it overwrites is forgotten, so no piece claims bytes another write changed; and
    /// two runs that meet become one (`CRC32C.combine`), so a chunk written whole is one piece however many
    /// segments wrote it.
    private func hash(_ raw: UnsafeRawBufferPointer, at offset: Int64) {
        var at = offset
        var rest = raw[...]
        while !rest.isEmpty {
            let index = at / chunkSize
            let take = Int(min(Int64(rest.count), (index + 1) * chunkSize - at))
            let slice = UnsafeRawBufferPointer(rebasing: rest.prefix(take))
            let upper = at + Int64(take)
            // Taken out of the dictionary, not copied: the array is then changed in place, with no allocation
            // per write.
            var runs = chunks.removeValue(forKey: index) ?? []
            runs.removeAll { $0.end != at && $0.start < upper && $0.end > at }
            let i: Int
            if let continued = runs.firstIndex(where: { $0.end == at }) {
                i = continued
                runs[i].crc.update(slice)
                runs[i].filled += Int64(take)
            } else {
                var crc = CRC32C()
                crc.update(slice)
                runs.append(Run(start: at, filled: Int64(take), crc: crc))
                i = runs.count - 1
            }
            if let next = runs.firstIndex(where: { $0.start == upper }) {
                let joined = CRC32C.combine(runs[i].crc.value, runs[next].crc.value, length: runs[next].filled)
                runs[i].crc = CRC32C(value: joined)
                runs[i].filled += runs[next].filled
                runs.remove(at: next)
            }
            chunks[index] = runs
            at = upper
            rest = rest.dropFirst(take)
        }
    }

    /// The verified pieces, in offset order (call after `sync` for a checkpoint). `forCheckpoint`: at most
    /// `runsPerChunk` of a chunk, its longest (what else it holds is fetched again after a resume); otherwise
    /// every run, as the next attempt of this run takes them.
    func pieces(forCheckpoint: Bool = false) -> [Checkpoint.Piece] {
        chunks.keys.sorted().flatMap { index in
            var runs = chunks[index]!
            if forCheckpoint, runs.count > Self.runsPerChunk {
                runs = Array(runs.sorted { $0.filled > $1.filled }.prefix(Self.runsPerChunk))
            }
            return runs.sorted { $0.start < $1.start }.map {
                Checkpoint.Piece(offset: $0.start, length: $0.filled, crc32c: $0.crc.hex)
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
