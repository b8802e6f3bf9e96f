import Crypto

/// What a checkpoint piece claims about its bytes: a CRC-32C (version 2) or, in checkpoints written
/// before, a sha256.
enum PieceChecksum: Sendable, Equatable {
    case crc32c(UInt32)
    case sha256(String)

    /// The piece's checksum; nil unless it carries exactly one, well formed.
    init?(_ piece: Checkpoint.Piece) {
        switch (piece.crc32c, piece.sha256) {
        case (let crc?, nil):
            guard let value = CRC32C.parse(crc) else { return nil }
            self = .crc32c(value)
        case (nil, let sha?):
            self = .sha256(sha)
        default:
            return nil
        }
    }

    /// Reads a piece back: always the CRC-32C (the chunk carries on with it once verified), and the
    /// sha256 only when the piece was recorded with one.
    struct Reader {
        private(set) var crc = CRC32C()
        private var sha256: SHA256?

        init(for expected: PieceChecksum) {
            if case .sha256 = expected { sha256 = SHA256() }
        }

        mutating func update(_ raw: UnsafeRawBufferPointer) {
            crc.update(raw)
            sha256?.update(bufferPointer: raw)
        }

        /// Whether the bytes read are those the piece recorded.
        func matches(_ expected: PieceChecksum) -> Bool {
            switch expected {
            case .crc32c(let value): return crc.value == value
            case .sha256(let hex): return sha256?.finalize().hex == hex
            }
        }
    }
}
