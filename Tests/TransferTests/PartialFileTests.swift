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
            // Segment A from 0; segment B took over at 300 000, inside the first chunk, and runs into the second.
            let cut: Int64 = 300_000
            try Self.write(file, cut..<(Self.chunk + 500_000))
            try Self.write(file, 0..<cut)
            let pieces = file.pieces()
            #expect(
                pieces.map { $0.offset..<($0.offset + $0.length) } == [
                    0..<cut, cut..<Self.chunk, Self.chunk..<(Self.chunk + 500_000),
                ])
            // A new run over the same file finds every piece good, the first two seeding the whole-file hash.
            let again = try open()
            #expect(again.verify(pieces) == pieces)
            #expect(again.frontier == Self.chunk + 500_000)
            #expect(again.pieces() == pieces)
        }
    }

    @Test func aDamagedPieceIsTheOnlyOneDropped() throws {
        try Self.withFile { path, open in
            let file = try open()
            try Self.write(file, 300_000..<Self.chunk)
            try Self.write(file, 0..<300_000)
            let pieces = file.pieces()
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
}
