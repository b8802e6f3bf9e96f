import Digests
import Foundation
import TestSupport
import Testing

/// SHA-256 and SHA-1 (the Digests module): FIPS 180's examples, and random data fed in random parts against
/// coreutils' sha256sum / sha1sum, with the CPU's SHA instructions and with the portable block functions.
@Suite(.serialized) struct DigestTests {
    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// Both block functions where the CPU has SHA instructions; the portable ones alone otherwise.
    static func eachPath(_ body: (String) throws -> Void) rethrows {
        if DigestInstructions.hardware { try body("sha instructions") }
        try DigestInstructions.portable { try body("portable") }
    }

    @Test func fipsExamples() {
        let twoBlocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
        let examples: [(String, sha256: String, sha1: String)] = [
            (
                "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
                "da39a3ee5e6b4b0d3255bfef95601890afd80709"
            ),
            (
                "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
                "a9993e364706816aba3e25717850c26c9cd0d89d"
            ),
            (
                twoBlocks, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
                "84983e441c3bd26ebaae4aa1f95129e5e54670f1"
            ),
        ]
        Self.eachPath { path in
            for (text, sha256, sha1) in examples {
                #expect(Self.hex(SHA256.hash(data: Array(text.utf8))) == sha256, "\(path): \"\(text)\"")
                #expect(Self.hex(SHA1.hash(data: Array(text.utf8))) == sha1, "\(path): \"\(text)\"")
            }
            // A million "a", given 1000 at a time.
            var long256 = SHA256()
            var long1 = SHA1()
            let thousand = [UInt8](repeating: UInt8(ascii: "a"), count: 1000)
            for _ in 0..<1000 {
                long256.update(data: thousand)
                long1.update(data: thousand)
            }
            #expect(
                Self.hex(long256.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
                "\(path)")
            #expect(Self.hex(long1.finalize()) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f", "\(path)")
        }
    }

    /// Every length around a block's padding edge, and random data up to 3 MiB in random parts, against
    /// coreutils; a digest taken part-way leaves the hasher able to go on.
    @Test func randomDataInRandomPartsMatchesCoreutils() throws {
        let seed = SplitMix.seed(from: "METERWISE_DIGEST_SEED")
        print("digest test: seed \(seed) (replay: METERWISE_DIGEST_SEED=\(seed))")
        var random = SplitMix(seed: seed)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mw-digest-\(seed)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var lengths = Array(0...130) + [191, 192, 193, 4095, 4096, 65537]
        for _ in 0..<6 { lengths.append(Int.random(in: 1...(3 << 20), using: &random)) }
        for length in lengths {
            let data = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            let file = directory.appendingPathComponent("\(length).bin")
            try Data(data).write(to: file)
            let sha256sum = try BinaryRun.run([file.path], executable: "/usr/bin/sha256sum").stdout.prefix(64)
            let sha1sum = try BinaryRun.run([file.path], executable: "/usr/bin/sha1sum").stdout.prefix(40)
            #expect(sha256sum.count == 64 && sha1sum.count == 40, "coreutils printed no digest")
            try Self.eachPath { path in
                var sha256 = SHA256()
                var sha1 = SHA1()
                var at = 0
                var early: (at: Int, sha256: [UInt8], sha1: [UInt8])?
                while at < length {
                    let part = min(
                        length - at,
                        random.next() % 4 == 0
                            ? Int.random(in: 0...200_000, using: &random) : Int.random(in: 0...130, using: &random))
                    try data[at..<at + part].withUnsafeBytes { bytes in
                        sha256.update(bufferPointer: bytes)
                        sha1.update(bufferPointer: bytes)
                        if early == nil, at > 0 { early = (at + part, sha256.finalize(), sha1.finalize()) }
                        try #require(bytes.count == part)
                    }
                    at += part
                }
                #expect(Self.hex(sha256.finalize())[...] == sha256sum, "\(path), \(length) bytes, seed \(seed)")
                #expect(Self.hex(sha1.finalize())[...] == sha1sum, "\(path), \(length) bytes, seed \(seed)")
                if let early {
                    #expect(early.sha256 == SHA256.hash(data: data[..<early.at]), "\(path), first \(early.at) bytes")
                    #expect(early.sha1 == SHA1.hash(data: data[..<early.at]), "\(path), first \(early.at) bytes")
                }
            }
        }
    }
}
