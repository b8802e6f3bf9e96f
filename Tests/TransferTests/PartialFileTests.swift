import Foundation
import Glibc
import NIOCore
import Testing

@testable import Transfer

/// The partial file keeps each writer's part of a chunk as a piece of its own (a segment that took over the
/// rest of another's range inside a chunk), checks a checkpoint's pieces without reading a byte twice, and
/// forgets a run whose bytes another write changed.
struct PartialFileTests {
    static let chunk: Int64 = 1 << 20
    static let bytes: [UInt8] = (0..<(4 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }

    /// Runs `body` with a partial file of 4 MiB in 1 MiB chunks, in a folder removed afterwards.
    static func withFile(_ body: (String, () throws -> PartialFile) throws -> Void) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mw-partial-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/f.part"
        try body(path) {
            let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw TransferError(.fileSystem, "open \(path)") }
            return try PartialFile(
                fd: fd, path: path, chunkSize: chunk, total: Int64(bytes.count), truncate: false, digests: true)
        }
    }

    static func write(_ file: PartialFile, _ range: Range<Int64>, step: Int64 = 100_000) throws {
        var at = range.lowerBound
        while at < range.upperBound {
            let end = min(at + step, range.upperBound)
            try file.write(ByteBuffer(bytes: bytes[Int(at)..<Int(end)]), at: at)
            at = end
        }
    }

    @Test func twoWritersInOneChunkKeepTheirOwnPieces() throws {
        try Self.withFile { _, open in
            let file = try open()
            // Segment B took over at 300 000, inside the first chunk, and runs into the second; segment A, from 0,
            // was paused 50 000 bytes short of it.
            try Self.write(file, 300_000..<(Self.chunk + 500_000))
            try Self.write(file, 0..<250_000)
            let pieces = file.pieces()
            #expect(
                pieces.map { $0.offset..<($0.offset + $0.length) } == [
                    0..<250_000, 300_000..<Self.chunk, Self.chunk..<(Self.chunk + 500_000),
                ])
            // A new run over the same file finds every piece good, the first one seeding the whole-file hash.
            let again = try open()
            #expect(again.verify(pieces) == pieces)
            #expect(again.frontier == 250_000)
            #expect(again.pieces() == pieces)
        }
    }

    /// A pause while a large partial file is checked ends the check at the next megabyte: nothing is returned, so
    /// nothing kept so far can become the checkpoint (a 64 GiB sparse partial was read for a minute under SIGTERM).
    @Test func aStopEndsTheCheckAtTheNextMegabyte() throws {
        try Self.withFile { _, open in
            let file = try open()
            try Self.write(file, 0..<Int64(Self.bytes.count))
            let pieces = file.pieces()
            #expect(pieces.count == 4)
            var asked = 0
            let stopped = try open().verify(pieces) {
                asked += 1
                return asked > 2
            }
            #expect(stopped == nil)
            #expect(asked == 3)
            #expect(try open().verify(pieces) { false } == pieces)
        }
    }

    @Test func aDamagedPieceIsTheOnlyOneDropped() throws {
        try Self.withFile { path, open in
            let file = try open()
            try Self.write(file, 300_000..<Self.chunk)
            try Self.write(file, 0..<250_000)
            let pieces = file.pieces()
            #expect(pieces.count == 2)
            let fd = Glibc.open(path, O_WRONLY)
            #expect(pwrite(fd, [UInt8(0xff) ^ Self.bytes[400_000]], 1, 400_000) == 1)
            close(fd)
            #expect(try open().verify(pieces) == [pieces[0]])
        }
    }

    @Test func aTamperedCheckpointIsNotReadTwiceNorAcrossChunks() throws {
        try Self.withFile { _, open in
            let file = try open()
            try Self.write(file, 0..<(2 * Self.chunk))
            let pieces = file.pieces()
            #expect(pieces.count == 2)
            var crossing = pieces[0]
            crossing.offset = 1000
            // The second copy of piece 0 overlaps it, and a piece across the chunk's end is no piece.
            let verified = try open().verify([pieces[0], pieces[0], crossing, pieces[1]])
            #expect(verified == pieces)
        }
    }

    @Test func aWriteOverARunForgetsIt() throws {
        try Self.withFile { _, open in
            let file = try open()
            try Self.write(file, 0..<600_000)
            try Self.write(file, 500_000..<700_000)
            #expect(file.pieces().map { $0.offset..<($0.offset + $0.length) } == [500_000..<700_000])
            // A write that continues a run is taken into it.
            try Self.write(file, 700_000..<800_000)
            #expect(file.pieces().map { $0.offset..<($0.offset + $0.length) } == [500_000..<800_000])
        }
    }

    @Test func runsThatMeetBecomeOnePiece() throws {
        try Self.withFile { _, open in
            let file = try open()
            // Three writers in the first chunk, the last one filling the gap between the other two.
            try Self.write(file, 700_000..<Self.chunk)
            try Self.write(file, 0..<300_000)
            try Self.write(file, 300_000..<700_000)
            let pieces = file.pieces()
            #expect(pieces.map { $0.offset..<($0.offset + $0.length) } == [0..<Self.chunk])
            #expect(try open().verify(pieces) == pieces)
        }
    }

    @Test func aChunkWithMoreGapsThanACheckpointKeepsIsStillWholeInTheRun() throws {
        try Self.withFile { _, open in
            let file = try open()
            // Ten runs with gaps: all of them count in this run; a checkpoint keeps the eight longest.
            for k in Int64(0)..<10 { try Self.write(file, (k * 100_000 + 1000)..<(k * 100_000 + 50_000 + k)) }
            #expect(file.pieces().count == 10)
            let kept = file.pieces(forCheckpoint: true)
            #expect(kept.count == Int(ObjectLimits.piecesPerChunk))
            #expect(!kept.contains { $0.offset == 1000 || $0.offset == 101_000 })
            // The gaps filled, the chunk's start included: one piece.
            for k in Int64(0)..<10 { try Self.write(file, (k * 100_000 + 50_000 + k)..<((k + 1) * 100_000 + 1000)) }
            try Self.write(file, 0..<1000)
            try Self.write(file, 1_001_000..<Self.chunk)
            #expect(file.pieces().map { $0.offset..<($0.offset + $0.length) } == [0..<Self.chunk])
        }
    }

    @Test func combinedChecksumsEqualTheChecksumOfTheBytesJoined() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let length = Int.random(in: 0...5000, using: &generator)
            let split = Int.random(in: 0...length, using: &generator)
            let bytes = Self.bytes[0..<length]
            var whole = CRC32C()
            var first = CRC32C()
            var second = CRC32C()
            bytes.withUnsafeBytes { raw in
                whole.update(raw)
                first.update(UnsafeRawBufferPointer(rebasing: raw[0..<split]))
                second.update(UnsafeRawBufferPointer(rebasing: raw[split...]))
            }
            #expect(
                CRC32C.combine(first.value, second.value, length: Int64(length - split)) == whole.value,
                "\(length) split at \(split)")
        }
    }

    /// A checkpoint's eight pieces that leave the chunk's first byte out: the byte fetched again is taken in
    /// (the runs of a chunk were capped at eight, so it never was, and the download fetched it for ever).
    @Test func aChunkWithEightPiecesTakesTheBytesBeforeThem() throws {
        try Self.withFile { _, open in
            try Self.write(try open(), 0..<Self.chunk)
            let cuts: [Int64] = [1, 1000, 5000, 70_000, 200_000, 333_333, 600_000, 900_000, Self.chunk]
            let pieces = (0..<8).map { k in
                var crc = CRC32C()
                Self.bytes[Int(cuts[k])..<Int(cuts[k + 1])].withUnsafeBytes { crc.update($0) }
                return Checkpoint.Piece(offset: cuts[k], length: cuts[k + 1] - cuts[k], crc32c: crc.hex)
            }
            let resumed = try open()
            #expect(resumed.verify(pieces) == pieces)
            try Self.write(resumed, 0..<1)
            let now = resumed.pieces()
            #expect(now.first?.offset == 0)
            #expect(now.reduce(0) { $0 + $1.length } == Self.chunk)
        }
    }
}
