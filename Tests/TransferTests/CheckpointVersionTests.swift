import Crypto
import Foundation
import RangeServer
import Testing

@testable import Transfer

/// Version 2 checkpoints carry CRC-32C pieces; version 1 checkpoints (sha256 pieces) still resume.
@Suite(.serialized)
struct CheckpointVersionTests {
    static let content = RangeContent.generated(size: 6 << 20, seed: 31)

    /// A version 1 checkpoint written by hand, as the previous release wrote them, over a real partial
    /// file: three whole chunks and half of the fourth. With `damaged`, a byte of chunk 1 is flipped.
    static func writeVersionOne(_ request: DownloadRequest, damaged: Bool) throws -> Int64 {
        let bytes = content.allBytes()
        let held = 3 * Fixture.mib + Fixture.mib / 2
        var partial = Array(bytes[0..<Int(held)])
        var pieces: [[String: Any]] = []
        var offset: Int64 = 0
        while offset < held {
            let length = min(Fixture.mib, held - offset)
            let digest = SHA256.hash(data: partial[Int(offset)..<Int(offset + length)])
                .map { String(format: "%02x", $0) }.joined()
            pieces.append(["offset": offset, "length": length, "sha256": digest])
            offset += length
        }
        if damaged { partial[Int(Fixture.mib) + 17] ^= 0xff }
        let checkpoint: [String: Any] = [
            "format": "meterwise-checkpoint", "version": 1, "url": request.url, "destination": request.destination,
            "validators": ["etag": content.etag, "last_modified": content.lastModified],
            "total_bytes": content.size, "accept_ranges": true, "chunk_size": Fixture.mib,
            "segments": [["start": held, "end": content.size]], "pieces": pieces,
        ]
        let json = try JSONSerialization.data(withJSONObject: checkpoint, options: [.sortedKeys])
        let privateFile: [FileAttributeKey: Any] = [.posixPermissions: 0o600]
        let files = FileManager.default
        try #require(files.createFile(atPath: request.partialPath, contents: Data(partial), attributes: privateFile))
        try #require(files.createFile(atPath: request.checkpointPath, contents: json, attributes: privateFile))
        return held
    }

    @Test(arguments: [false, true])
    func versionOneCheckpointWithSHA256PiecesResumes(damaged: Bool) async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        try await Fixture.withServer(content: Self.content) { server in
            let request = fixture.request(server, segments: 1)
            let held = try Self.writeVersionOne(request, damaged: damaged)
            let kept = damaged ? held - Fixture.mib : held
            let (outcome, events) = try await Fixture.runCollecting(Download(request: request))
            let result = try #require(outcome.result)
            #expect(result.sha256 == Self.content.sha256Hex())
            #expect(Fixture.sha256(file: request.destination) == Self.content.sha256Hex())
            #expect(events.restarts == 0)
            #expect(result.resumedBytes == kept)
            #expect(result.bytesFetched == Self.content.size - kept)
            #expect(server.bytesServed == Self.content.size - kept)
            let warned = events.contains {
                if case .warning(let w) = $0 { return w.contains("damaged") } else { return false }
            }
            #expect(warned == damaged)
        }
    }

    /// Pausing writes a version 2 checkpoint whose pieces carry the CRC-32C of their bytes and no sha256.
    @Test func newCheckpointsCarryCRC32CPieces() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        try await Fixture.withServer(content: Self.content, faults: [.throttle(bytesPerSecond: 4 << 20)]) { server in
            let request = fixture.request(server, segments: 2)
            let (first, _) = try await Fixture.runPausing(Download(request: request), at: 3 << 20)
            #expect(first == .paused)
            let data = try #require(FileManager.default.contents(atPath: request.checkpointPath))
            let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            #expect(object["version"] as? Int == 2)
            let raw = try #require(object["pieces"] as? [[String: Any]])
            #expect(!raw.isEmpty)
            #expect(raw.allSatisfy { Set($0.keys) == ["offset", "length", "crc32c"] })

            let checkpoint = try Checkpoint.decode(data)
            #expect(checkpoint.version == Checkpoint.currentVersion)
            let bytes = Self.content.allBytes()
            for piece in checkpoint.pieces {
                let value = try #require(piece.crc32c.flatMap(CRC32C.parse))
                var crc = CRC32C()
                bytes[Int(piece.offset)..<Int(piece.offset + piece.length)].withUnsafeBytes { crc.update($0) }
                #expect(value == crc.value, "piece at \(piece.offset)")
                #expect(piece.sha256 == nil)
            }

            try await server.waitUntilIdle()
            server.setFaults([])
            let (second, _) = try await Fixture.runCollecting(Download(request: request))
            let result = try #require(second.result)
            #expect(result.sha256 == Self.content.sha256Hex())
            #expect(result.resumedBytes == checkpoint.bytesDone)
        }
    }
}
