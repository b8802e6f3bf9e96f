import Crypto
import Foundation
import Testing

@testable import Transfer

#if canImport(Glibc)
import Glibc
#endif

/// Digests of pieces taken from the bytes on their way to the file, without reading them back.
@Suite struct PieceStreamTests {
    /// 10 000 bytes in pieces of 1000 (and 500 for a short last piece with 9 500), each kind of check.
    static let bytes: [UInt8] = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 8) }

    static let checks: [PieceCheck] = [
        .crc32c,
        .hashes(Metalink.Pieces(kind: .sha256, length: 1000, hashes: [])),
        .hashes(Metalink.Pieces(kind: .sha1, length: 1000, hashes: [])),
    ]

    /// The digest the check reads back from a file holding `bytes`: what a streamed digest must equal.
    static func readBack(_ check: PieceCheck, _ range: Range<Int64>, of bytes: [UInt8]) throws -> [UInt8]? {
        let path = NSTemporaryDirectory() + "mw-piecestream-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0o600)
        try #require(fd >= 0)
        defer {
            close(fd)
            unlink(path)
        }
        try #require(bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == bytes.count)
        return check.digest(fd: fd, range: range)
    }

    @Test(arguments: checks)
    func aPieceWrittenWholeInChunksOfAnySizeHasTheDigestReadBackGives(check: PieceCheck) throws {
        for chunk in [1, 333, 1000, 1700, 10_000] {
            var stream = PieceStream(check: check, pieceLength: 1000, total: 9500)
            var at = 0
            while at < 9500 {
                let n = min(chunk, 9500 - at)
                Self.bytes[at..<at + n].withUnsafeBytes { stream.wrote($0, at: Int64(at)) }
                at += n
            }
            for piece in 0..<10 {
                let range = Int64(piece * 1000)..<Int64(min(9500, piece * 1000 + 1000))
                let expected = try Self.readBack(check, range, of: Array(Self.bytes[0..<9500]))
                #expect(expected != nil)
                #expect(stream.take(piece) == expected, "piece \(piece), chunks of \(chunk)")
                #expect(stream.take(piece) == nil, "a digest is taken once")
            }
        }
    }

    @Test(arguments: checks)
    func aPieceBegunPartWayOrWithAGapHasNoDigest(check: PieceCheck) {
        var stream = PieceStream(check: check, pieceLength: 1000, total: 10_000)
        // Piece 0 from byte 200 (a stolen span, or bytes a resumed partial held before it).
        Self.bytes[200..<1000].withUnsafeBytes { stream.wrote($0, at: 200) }
        // Piece 1 whole but for a gap: 1000..<1400, then 1500..<2000.
        Self.bytes[1000..<1400].withUnsafeBytes { stream.wrote($0, at: 1000) }
        Self.bytes[1500..<2000].withUnsafeBytes { stream.wrote($0, at: 1500) }
        // Piece 2 begun, then piece 3 whole, then the rest of piece 2: 2 was left, it has no digest.
        Self.bytes[2000..<2600].withUnsafeBytes { stream.wrote($0, at: 2000) }
        Self.bytes[3000..<4000].withUnsafeBytes { stream.wrote($0, at: 3000) }
        Self.bytes[2600..<3000].withUnsafeBytes { stream.wrote($0, at: 2600) }
        #expect(stream.take(0) == nil)
        #expect(stream.take(1) == nil)
        #expect(stream.take(2) == nil)
        #expect(stream.take(3) != nil)
        // Bytes past the end of the file are not hashed into anything.
        Self.bytes[0..<10].withUnsafeBytes { stream.wrote($0, at: 10_000) }
        #expect(stream.take(10) == nil)
    }

    @Test func aBadPieceIsToldApartByItsStreamedDigest() throws {
        let good = Array(Self.bytes[0..<1000])
        let pieces = Metalink.Pieces(kind: .sha256, length: 1000, hashes: [Array(SHA256.hash(data: good))])
        let check = PieceCheck.hashes(pieces)
        var stream = PieceStream(check: check, pieceLength: 1000, total: 1000)
        good.withUnsafeBytes { stream.wrote($0, at: 0) }
        #expect(check.matches(piece: 0, digest: stream.take(0)))
        var bad = good
        bad[500] ^= 1
        bad.withUnsafeBytes { stream.wrote($0, at: 0) }
        #expect(!check.matches(piece: 0, digest: stream.take(0)))
        #expect(!check.matches(piece: 0, digest: nil))
    }
}
