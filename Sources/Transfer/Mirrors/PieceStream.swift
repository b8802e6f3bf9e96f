import Crypto

/// The digests of the pieces one request writes, taken from its bytes on their way to the file, so a piece
/// the request wrote whole, from its first byte to its last, is checked without reading it back.
///
/// Only a piece whose every byte passed through here in order has a digest: one the request began part way
/// (a stolen span, bytes a resumed partial held) has none and is read back (`PieceCheck.digest(fd:range:)`).
/// The board gives each request bytes no other request writes, so what passed here is what the file holds.
struct PieceStream {
    private let check: PieceCheck
    private let pieceLength: Int64
    private let total: Int64
    /// The piece being hashed, its hash so far and the offset of the byte it expects next.
    private var current: (piece: Int, hasher: Hasher, next: Int64)?
    /// Pieces hashed whole and not yet taken.
    private var finished: [Int: [UInt8]] = [:]

    init(check: PieceCheck, pieceLength: Int64, total: Int64) {
        self.check = check
        self.pieceLength = max(1, pieceLength)
        self.total = total
    }

    /// Takes `bytes`, just written at `offset` of the file.
    mutating func wrote(_ bytes: UnsafeRawBufferPointer, at offset: Int64) {
        var at = offset
        var rest = bytes[...]
        while !rest.isEmpty, at >= 0, at < total {
            let piece = Int(at / pieceLength)
            let start = Int64(piece) * pieceLength
            let end = min(total, start + pieceLength)
            let n = Int(min(Int64(rest.count), end - at))
            if current?.piece != piece || current?.next != at {
                current = at == start ? (piece, Hasher(check), at) : nil
            }
            // Updated in place (`current?.`): a copy would share the hash's state and copy it on every update.
            current?.hasher.update(UnsafeRawBufferPointer(rebasing: rest.prefix(n)))
            current?.next = at + Int64(n)
            if let done = current, done.next == end {
                finished[piece] = done.hasher.finalize()
                current = nil
            }
            at += Int64(n)
            rest = rest.dropFirst(n)
        }
    }

    /// The digest of `piece` if every byte of it was written through here, in order; each is taken once.
    mutating func take(_ piece: Int) -> [UInt8]? { finished.removeValue(forKey: piece) }

    /// One piece's hash in the check's kind; its digest is what `PieceCheck.digest(fd:range:)` gives. One of
    /// the three is set (each updated in place: a hash moved out of an enum to be updated would be copied).
    struct Hasher {
        private var sha256: SHA256?
        private var sha1: Insecure.SHA1?
        private var crc: CRC32C?

        init(_ check: PieceCheck) {
            switch check {
            case .hashes(let pieces):
                switch pieces.kind {
                case .sha256: sha256 = SHA256()
                case .sha1: sha1 = Insecure.SHA1()
                }
            case .crc32c: crc = CRC32C()
            }
        }

        mutating func update(_ bytes: UnsafeRawBufferPointer) {
            sha256?.update(bufferPointer: bytes)
            sha1?.update(bufferPointer: bytes)
            crc?.update(bytes)
        }

        func finalize() -> [UInt8] {
            if let sha256 { return Array(sha256.finalize()) }
            if let sha1 { return Array(sha1.finalize()) }
            return withUnsafeBytes(of: (crc?.value ?? 0).bigEndian) { Array($0) }
        }
    }
}
