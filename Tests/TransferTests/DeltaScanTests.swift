import CBlockSums
import Crypto
import Foundation
import TestSupport
import Testing

@testable import Transfer

/// The delta's pure parts: MD4, the rolling sum, the control file's reader, the scan, the plan, the
/// multipart reader and `--zsync`'s optional value. Control files here are made by `ZsyncMaker` (below),
/// which writes what zsyncmake writes; `DeltaTests` checks against zsyncmake itself.
struct DeltaScanTests {
    static func md4(_ text: String) -> String {
        var out = [UInt8](repeating: 0, count: 16)
        let bytes = Array(text.utf8)
        mw_md4(bytes, bytes.count, 0, &out)
        return out.hex
    }

    @Test func md4MatchesRFC1320() {
        #expect(Self.md4("") == "31d6cfe0d16ae931b73c59d7e0c089c0")
        #expect(Self.md4("a") == "bde52cb31de33e46245e05fbdbd6fb24")
        #expect(Self.md4("abc") == "a448017aaf21d8525fc10ae87aa6729d")
        #expect(Self.md4("message digest") == "d9130a8164549fe818874806e1c7014b")
        #expect(
            Self.md4("12345678901234567890123456789012345678901234567890123456789012345678901234567890")
                == "e33b4ddc9c38f2199c3e7b164fcc0536")
    }

    @Test func md4PaddingIsTheSameAsZerosAppended() {
        var random = SplitMix(seed: 3)
        for length in [0, 1, 55, 56, 63, 64, 65, 1000, 4095] {
            for pad in [0, 1, 8, 63, 64, 200, 4096 - length] where pad >= 0 {
                let data = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
                var a = [UInt8](repeating: 0, count: 16)
                var b = [UInt8](repeating: 0, count: 16)
                mw_md4(data, length, pad, &a)
                let padded = data + [UInt8](repeating: 0, count: pad)
                mw_md4(padded, padded.count, 0, &b)
                #expect(a == b, "length \(length) pad \(pad)")
            }
        }
    }

    @Test func rollingSumIsZsyncs() {
        // a = Σ c, b = Σ (n - i)·c, both mod 2^16: worked by hand for 1 2 3 (n = 3): a = 6, b = 3+4+3 = 10.
        #expect(mw_rsum([1, 2, 3], 3) == (6 << 16 | 10))
        let all = [UInt8](repeating: 255, count: 4096)
        let a = UInt32(UInt16(truncatingIfNeeded: 255 * 4096))
        let b = UInt32(UInt16(truncatingIfNeeded: 255 * (4096 * 4097 / 2)))
        #expect(mw_rsum(all, 4096) == (a << 16 | b))
    }

    // MARK: - The control file

    @Test func readsWhatTheMakerWrites() throws {
        let target = Self.bytes(100_000, seed: 1)
        let text = ZsyncMaker.make(target, blockSize: 2048, sequence: 2, weakBytes: 3, strongBytes: 5)
        let control = try ZsyncControl.parse(text, source: "t.zsync")
        #expect(control.blockSize == 2048)
        #expect(control.length == 100_000)
        #expect(control.blockCount == 49)
        #expect(control.sequenceMatches == 2 && control.weakBytes == 3 && control.strongBytes == 5)
        #expect(control.sha1 == Insecure.SHA1.hash(data: target).hex)
        #expect(control.urls == ["t.bin"])
        #expect(control.weakMask == 0x00FF_FFFF)
        #expect(control.range(ofBlock: 48) == 98_304..<100_000)
    }

    @Test(arguments: [
        (
            "zsync: 0.6.2\nBlocksize: 3000\nLength: 10\nHash-Lengths: 1,4,16\nSHA-1: \(String(repeating: "a", count: 40))\n\n",
            "t.zsync:2: Blocksize `3000`"
        ),
        (
            "zsync: 0.6.2\nBlocksize: 2048\nLength: -1\nHash-Lengths: 1,4,16\nSHA-1: \(String(repeating: "a", count: 40))\n\n",
            "t.zsync:3: Length `-1`"
        ),
        (
            "zsync: 0.6.2\nBlocksize: 2048\nLength: 99999999999999999999\nHash-Lengths: 1,4,16\nSHA-1: \(String(repeating: "a", count: 40))\n\n",
            "t.zsync:3: Length"
        ),
        (
            "zsync: 0.6.2\nBlocksize: 2048\nLength: 10\nHash-Lengths: 3,2,5\nSHA-1: \(String(repeating: "a", count: 40))\n\n",
            "t.zsync:4: Hash-Lengths `3,2,5`"
        ),
        ("zsync: 0.6.2\nBlocksize: 2048\nLength: 10\nHash-Lengths: 1,4,16\nSHA-1: xyz\n\n", "t.zsync:5: SHA-1 `xyz`"),
        (
            "zsync: 0.6.2\nBlocksize: 2048\nLength: 10\nHash-Lengths: 1,4,16\nSHA-1: \(String(repeating: "a", count: 40))\n",
            "no end"
        ),
        (
            "zsync: 0.6.2\nBlocksize: 2048\nLength: 10\nHash-Lengths: 1,4,16\nSHA-1: \(String(repeating: "a", count: 40))\n\nabc",
            "the checksums take 3 bytes where 1 blocks of 20 bytes need 20"
        ),
        (
            "zsync: 0.6.2\nBlocksize: 256\nLength: 1125899906842624\nHash-Lengths: 1,4,16\nSHA-1: \(String(repeating: "a", count: 40))\n\n",
            "blocks are more than"
        ),
        ("Blocksize: 2048\n\n", "no `zsync:` line"),
        ("<html>portal</html>\n\n", "not `Key: value`"),
    ])
    func malformedControlFilesSayWhatIsWrong(text: String, says: String) {
        #expect {
            _ = try ZsyncControl.parse(Array(text.utf8), source: "t.zsync")
        } throws: { error in
            guard let error = error as? TransferError else { return false }
            return error.code == .controlFile && error.message.contains(says) && error.message.contains("zsyncmake")
        }
    }

    @Test func randomBytesNeverCrashTheReader() {
        var random = SplitMix(seed: 9)
        let good = ZsyncMaker.make(
            Self.bytes(10_000, seed: 2), blockSize: 1024, sequence: 1, weakBytes: 4, strongBytes: 16)
        for _ in 0..<500 {
            var bytes = good
            for _ in 0..<Int.random(in: 1...8, using: &random) {
                bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            }
            if Bool.random(using: &random) {
                bytes = Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &random)))
            }
            _ = try? ZsyncControl.parse(bytes, source: "fuzz")
        }
    }

    // MARK: - The scan

    /// The target assembled from what the scan found in `seed` and the missing ranges taken from `target`.
    static func assemble(target: [UInt8], seed: [UInt8], control: ZsyncControl, parts: Int? = nil) async throws -> (
        [UInt8], DeltaPlan
    ) {
        let index = try BlockIndex(control)
        let map = BlockMap(blocks: control.blockCount)
        let fd = try TemporaryFile(seed)
        _ = await index.scan(
            fd: fd.descriptor, length: Int64(seed.count), seed: 1, mode: .rolling, found: map, parts: parts,
            progress: { _ in })
        let plan = DeltaPlan(control: control, found: map.entries)
        var out = [UInt8](repeating: 0, count: target.count)
        for copy in plan.copies {
            for k in 0..<Int(copy.length) { out[Int(copy.to) + k] = seed[Int(copy.from) + k] }
        }
        for range in plan.missing {
            for k in Int(range.lowerBound)..<Int(range.upperBound) { out[k] = target[k] }
        }
        return (out, plan)
    }

    @Test(arguments: [(1, 4, 16), (2, 2, 5), (2, 3, 4), (1, 2, 8)])
    func findsShiftedBlocks(sequence: Int, weakBytes: Int, strongBytes: Int) async throws {
        let old = Self.bytes(300_000, seed: 4)
        var new = old
        new.insert(contentsOf: Self.bytes(777, seed: 5), at: 50_000)  // shifts all that follows
        new.removeSubrange(200_000..<200_300)
        new.replaceSubrange(120_000..<121_000, with: Self.bytes(1000, seed: 6))
        new += Self.bytes(123, seed: 7)  // a short last block
        let control = try ZsyncControl.parse(
            ZsyncMaker.make(new, blockSize: 1024, sequence: sequence, weakBytes: weakBytes, strongBytes: strongBytes),
            source: "t")
        let (out, plan) = try await Self.assemble(target: new, seed: old, control: control)
        #expect(out == new)
        // Four changes touch at most 2 blocks each, the tail 1 and a pairing rule at most one more per change.
        #expect(plan.bytesToFetch <= 12 * 1024, "fetches \(plan.bytesToFetch)")
        #expect(plan.bytesReused > 280_000)
    }

    @Test(arguments: [2, 3, 7])
    func aSeedScannedInPartsFindsWhatOneScanFinds(parts: Int) async throws {
        let old = Self.bytes(400_000, seed: 12)
        var new = old
        new.insert(contentsOf: Self.bytes(333, seed: 13), at: 100_000)
        new.replaceSubrange(250_000..<252_000, with: Self.bytes(2000, seed: 14))
        let control = try ZsyncControl.parse(
            ZsyncMaker.make(new, blockSize: 1024, sequence: 2, weakBytes: 3, strongBytes: 5), source: "t")
        let (whole, onePlan) = try await Self.assemble(target: new, seed: old, control: control)
        let (split, plan) = try await Self.assemble(target: new, seed: old, control: control, parts: parts)
        #expect(whole == new && split == new)
        // A run that crosses a cut is found again from the next part's first full pair: at most a block or
        // two per cut more to fetch.
        #expect(plan.bytesToFetch <= onePlan.bytesToFetch + Int64(parts - 1) * 2048)
    }

    @Test func aSeedThatShrankEndsItsScanAndNothingElse() async throws {
        // The scan is told of 1 MiB where 10 000 bytes are left (a seed truncated while it is scanned): it reads
        // what is there and stops; it never maps the file, so nothing can fault.
        let new = Self.bytes(50_000, seed: 15)
        let control = try ZsyncControl.parse(
            ZsyncMaker.make(new, blockSize: 1024, sequence: 2, weakBytes: 3, strongBytes: 5), source: "t")
        let index = try BlockIndex(control)
        for mode in [BlockIndex.Mode.rolling, .inPlace] {
            let map = BlockMap(blocks: control.blockCount)
            let file = try TemporaryFile(Array(new.prefix(10_000)))
            _ = await index.scan(
                fd: file.descriptor, length: 1 << 20, seed: 1, mode: mode, found: map, progress: { _ in })
            #expect(map.foundCount <= 10, "\(mode): \(map.foundCount)")
        }
    }

    @Test func anUnrelatedSeedGivesNothing() async throws {
        let new = Self.bytes(100_000, seed: 8)
        let control = try ZsyncControl.parse(
            ZsyncMaker.make(new, blockSize: 1024, sequence: 2, weakBytes: 2, strongBytes: 4), source: "t")
        let (out, plan) = try await Self.assemble(target: new, seed: Self.bytes(150_000, seed: 9), control: control)
        #expect(out == new)
        #expect(plan.bytesToFetch == 100_000)
        #expect(plan.missing == [0..<100_000])
    }

    @Test func repeatedBlocksAndAnIdenticalSeed() async throws {
        // Zeros everywhere: every block has the same checksums; the seed is the target itself.
        var new = [UInt8](repeating: 0, count: 64 * 1024)
        new += Self.bytes(5000, seed: 10)
        let control = try ZsyncControl.parse(
            ZsyncMaker.make(new, blockSize: 1024, sequence: 2, weakBytes: 2, strongBytes: 5), source: "t")
        let (out, plan) = try await Self.assemble(target: new, seed: new, control: control)
        #expect(out == new)
        #expect(plan.bytesToFetch == 0)
    }

    @Test func inPlaceFindsTheBlocksWhereTheyBelong() async throws {
        let new = Self.bytes(50_000, seed: 11)
        let control = try ZsyncControl.parse(
            ZsyncMaker.make(new, blockSize: 1024, sequence: 2, weakBytes: 3, strongBytes: 5), source: "t")
        var partial = new
        partial.replaceSubrange(10_000..<10_001, with: [partial[10_000] ^ 1])  // block 9 damaged
        partial.replaceSubrange(49_500..<50_000, with: [UInt8](repeating: 0, count: 500))  // the last one, half written
        let index = try BlockIndex(control)
        let map = BlockMap(blocks: control.blockCount)
        let file = try TemporaryFile(partial)
        _ = await index.scan(
            fd: file.descriptor, length: Int64(partial.count), seed: 0, mode: .inPlace, found: map, progress: { _ in })
        let plan = DeltaPlan(control: control, found: map.entries)
        #expect(plan.missing == [9216..<10240, 49_152..<50_000])
        #expect(plan.copies.isEmpty)  // seed 0 is the partial itself: nothing to copy
    }

    // MARK: - The plan

    @Test func requestsGroupRangesAndCutLongOnes() {
        var plan = DeltaPlan(control: Self.emptyControl, found: [])
        plan.missing = [0..<10, 20..<30, 40..<50, 100..<1000]
        plan.length = 1000
        #expect(plan.requests(maxRanges: 2, maxBytes: 1 << 20) == [[0..<10, 20..<30], [40..<50, 100..<1000]])
        #expect(
            plan.requests(maxRanges: 64, maxBytes: 400) == [
                [0..<10, 20..<30, 40..<50, 100..<470], [470..<870], [870..<1000],
            ])
        #expect(DeltaPlan.rangeHeader([0..<10, 20..<30]) == "bytes=0-9,20-29")
        #expect(plan.bytesToFetch == 930)
    }

    static let emptyControl = ZsyncControl(
        version: "0.6.2", filename: nil, blockSize: 1024, length: 0, sequenceMatches: 1, weakBytes: 4, strongBytes: 16,
        urls: [], sha1: "", weak: [], strong: [])

    // MARK: - multipart/byteranges

    static func multipart(_ parts: [(Range<Int64>, [UInt8])], total: Int64, boundary: String = "00000000001") -> [UInt8]
    {
        var out: [UInt8] = []
        for (range, bytes) in parts {
            out += Array(
                "\r\n--\(boundary)\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes \(range.lowerBound)-\(range.upperBound - 1)/\(total)\r\n\r\n"
                    .utf8)
            out += bytes
        }
        out += Array("\r\n--\(boundary)--\r\n".utf8)
        return out
    }

    static func read(_ body: [UInt8], chunk: Int, total: Int64 = 1000) throws -> [Int64: [UInt8]] {
        var reader = try #require(
            MultipartByteRanges(contentType: "multipart/byteranges; boundary=00000000001", total: total))
        var got: [Int64: [UInt8]] = [:]
        var start: Int64 = 0
        var at = 0
        while at < body.count {
            let end = min(body.count, at + chunk)
            let slice = Array(body[at..<end])
            var events: [(start: Int64?, offset: Int64, bytes: [UInt8])] = []
            try slice.withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws -> Void in
                try reader.feed(raw) { (event: MultipartByteRanges.Event) throws(TransferError) -> Void in
                    switch event {
                    case .part(let range): events.append((range.lowerBound, range.lowerBound, []))
                    case .data(let offset, let bytes): events.append((nil, offset, Array(bytes)))
                    }
                }
            }
            for event in events {
                if let first = event.start { start = first } else { got[start, default: []] += event.bytes }
            }
            at = end
        }
        try reader.finish()
        return got
    }

    @Test(arguments: [1, 2, 7, 100, 100_000])
    func multipartPartsArriveWhateverTheReads(chunk: Int) throws {
        let a = Self.bytes(10, seed: 1)
        let b = Self.bytes(300, seed: 2)
        // A part's data may contain what looks like a boundary: it is counted, not searched.
        let c = Array("\r\n--00000000001--\r\n".utf8)
        let body = Self.multipart([(0..<10, a), (100..<400, b), (500..<500 + Int64(c.count), c)], total: 1000)
        let got = try Self.read(body, chunk: chunk)
        #expect(got == [0: a, 100: b, 500: c])
    }

    @Test func malformedMultipartIsAProtocolViolation() {
        let wrongTotal = Self.multipart([(0..<10, Self.bytes(10, seed: 1))], total: 999)
        #expect(throws: TransferError.self) { try Self.read(wrongTotal, chunk: 50) }
        let cut = Array(Self.multipart([(0..<10, Self.bytes(10, seed: 1))], total: 1000).dropLast(20))
        #expect(throws: TransferError.self) { try Self.read(cut, chunk: 50) }
        let noRange = Array("\r\n--00000000001\r\nContent-Type: text/plain\r\n\r\nxx".utf8)
        #expect(throws: TransferError.self) { try Self.read(noRange, chunk: 50) }
        let endless = Array("\r\n--00000000001\r\n".utf8) + [UInt8](repeating: 0x41, count: 10_000)
        #expect(throws: TransferError.self) { try Self.read(endless, chunk: 50) }
        #expect(MultipartByteRanges(contentType: "application/octet-stream", total: 10) == nil)
        #expect(MultipartByteRanges(contentType: "multipart/byteranges", total: 10) == nil)
        #expect(MultipartByteRanges(contentType: "multipart/byteranges; boundary=\"q\"", total: 10) != nil)
    }

    static func bytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var random = SplitMix(seed: seed)
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
    }
}

/// Writes a control file as zsyncmake 0.6.2 does (header, then per block the last `weakBytes` of the
/// rolling sum in network order and the first `strongBytes` of the block's MD4, the last block zero-padded).
enum ZsyncMaker {
    static func make(_ target: [UInt8], blockSize: Int, sequence: Int, weakBytes: Int, strongBytes: Int) -> [UInt8] {
        var out = Array(
            """
            zsync: 0.6.2
            Filename: t.bin
            MTime: Thu, 26 Nov 2026 12:00:00 +0000
            Blocksize: \(blockSize)
            Length: \(target.count)
            Hash-Lengths: \(sequence),\(weakBytes),\(strongBytes)
            URL: t.bin
            SHA-1: \(Insecure.SHA1.hash(data: target).hex)


            """.utf8)
        var at = 0
        while at < target.count {
            var block = Array(target[at..<min(at + blockSize, target.count)])
            block += [UInt8](repeating: 0, count: blockSize - block.count)
            let r = mw_rsum(block, blockSize)
            let be: [UInt8] = [UInt8(r >> 24), UInt8(r >> 16 & 0xFF), UInt8(r >> 8 & 0xFF), UInt8(r & 0xFF)]
            out += be.suffix(weakBytes)
            var digest = [UInt8](repeating: 0, count: 16)
            mw_md4(block, blockSize, 0, &digest)
            out += digest.prefix(strongBytes)
            at += blockSize
        }
        return out
    }
}

/// A file of given bytes, open for reading, removed when the value goes.
final class TemporaryFile {
    let descriptor: Int32

    init(_ bytes: [UInt8]) throws {
        var template = Array("/tmp/meterwise-delta-XXXXXX".utf8CString)
        descriptor = mkstemp(&template)
        guard descriptor >= 0 else { throw CocoaError(.fileWriteUnknown) }
        unlink(template)
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == bytes.count else { throw CocoaError(.fileWriteUnknown) }
    }

    deinit { close(descriptor) }
}
