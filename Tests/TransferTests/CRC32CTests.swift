import CCRC32C
import TestSupport
import Testing

@testable import Transfer

/// CRC-32C: the standard check values, chaining, and the hardware path against the table.
struct CRC32CTests {
    static func crc(_ bytes: [UInt8]) -> UInt32 {
        var crc = CRC32C()
        bytes.withUnsafeBytes { crc.update($0) }
        return crc.value
    }

    @Test(
        arguments: [
            (Array("123456789".utf8), UInt32(0xE306_9283)),
            ([UInt8](repeating: 0, count: 32), 0x8A91_36AA),
            ([UInt8](repeating: 0xFF, count: 32), 0x62A8_AB43),
            ((0..<32).map { UInt8($0) }, 0x46DD_794E),
            ([], 0),
        ] as [([UInt8], UInt32)])
    func knownVectors(_ bytes: [UInt8], _ expected: UInt32) {
        #expect(Self.crc(bytes) == expected)
        #expect(bytes.withUnsafeBytes { mw_crc32c_software(0, $0.baseAddress, $0.count) } == expected)
    }

    /// Fed in pieces (any split, unaligned starts included) or at once: the same value.
    @Test func updatesChain() {
        let seed = SplitMix.seed(from: "METERWISE_CRC_SEED")
        var random = SplitMix(seed: seed)
        for _ in 0..<200 {
            let count = Int.random(in: 0...5000, using: &random)
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            var pieces = CRC32C()
            var at = 0
            bytes.withUnsafeBytes { raw in
                while at < count {
                    let take = Int.random(in: 0...min(100, count - at), using: &random)
                    pieces.update(UnsafeRawBufferPointer(rebasing: raw[at..<(at + take)]))
                    at += take
                }
            }
            #expect(pieces.value == Self.crc(bytes), "seed \(seed) (METERWISE_CRC_SEED replays it)")
        }
    }

    /// Whatever instructions this CPU uses give the table's answer, at every alignment and length.
    @Test func hardwareMatchesSoftware() {
        print("crc32c: \(CRC32C.implementation)")
        let seed = SplitMix.seed(from: "METERWISE_CRC_SEED")
        var random = SplitMix(seed: seed)
        let bytes = (0..<(1 << 16)).map { _ in UInt8.random(in: 0...255, using: &random) }
        bytes.withUnsafeBytes { raw in
            for _ in 0..<500 {
                let start = Int.random(in: 0..<64, using: &random)
                let count = Int.random(in: 0...(raw.count - start), using: &random)
                let initial = UInt32.random(in: 0...UInt32.max, using: &random)
                let slice = UnsafeRawBufferPointer(rebasing: raw[start..<(start + count)])
                let hardware = mw_crc32c_update(initial, slice.baseAddress, count)
                let software = mw_crc32c_software(initial, slice.baseAddress, count)
                #expect(hardware == software, "seed \(seed) (METERWISE_CRC_SEED replays it)")
            }
        }
    }

    /// The hardware paths run three 4 KiB lanes at once and join them: every length around a block's edges,
    /// at every alignment, fed whole or in two parts, gives the table's answer.
    @Test func threeLaneBlocksJoinAtTheirEdges() {
        let lane = 4096
        let bytes = (0..<(7 * lane + 64)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 7) }
        let lengths = [
            3 * lane - 1, 3 * lane, 3 * lane + 1, 3 * lane + 8, 6 * lane - 3, 6 * lane, 6 * lane + 5, 7 * lane,
        ]
        bytes.withUnsafeBytes { raw in
            for start in 0..<9 {
                for count in lengths {
                    let slice = UnsafeRawBufferPointer(rebasing: raw[start..<(start + count)])
                    let software = mw_crc32c_software(0xDEAD_BEEF, slice.baseAddress, count)
                    #expect(mw_crc32c_update(0xDEAD_BEEF, slice.baseAddress, count) == software, "\(count) at \(start)")
                    let half = count / 2 + start
                    let first = mw_crc32c_update(0xDEAD_BEEF, slice.baseAddress, half)
                    #expect(mw_crc32c_update(first, slice.baseAddress! + half, count - half) == software)
                }
            }
        }
    }

    /// The hardware paths this CPU has (/proc/cpuinfo's flags).
    static func hardwarePaths() -> [String] {
        let flags = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        #if arch(x86_64)
        guard flags.contains(" sse4_2") else { return [] }
        return flags.contains(" pclmulqdq") ? ["sse4.2", "sse4.2+pclmul"] : ["sse4.2"]
        #elseif arch(arm64)
        return flags.contains(" crc32") ? ["armv8-crc"] : []
        #else
        return []
        #endif
    }

    /// Every path this CPU has, whichever the first call chose: lengths around the folding's 16-, 64- and
    /// 128-byte steps and the lanes' 12 KiB blocks, at every alignment of a word, give the table's answer.
    @Test(arguments: hardwarePaths())
    func everyHardwarePathGivesTheTablesAnswer(path: String) {
        let bytes = (0..<(40 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 11) }
        var lengths = Array(0...300)
        for edge in [1024, 4096, 12288, 24576, 32768] { lengths += (edge - 17)...(edge + 17) }
        var ran: Int32 = 0
        bytes.withUnsafeBytes { raw in
            for start in 0..<9 {
                for count in lengths where start + count <= raw.count {
                    let slice = UnsafeRawBufferPointer(rebasing: raw[start..<(start + count)])
                    let software = mw_crc32c_software(0x1234_5678, slice.baseAddress, count)
                    let got = mw_crc32c_through(path, 0x1234_5678, slice.baseAddress, count, &ran)
                    #expect(ran == 1 && got == software, "\(path): \(count) bytes at \(start)")
                }
            }
        }
    }

    /// x86_64 has had SSE 4.2 for 15 years: on such a CPU the hardware path must be the one taken.
    @Test func hardwareIsUsedWhenTheCPUHasIt() throws {
        #if arch(x86_64)
        let flags = try String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)
        if flags.contains(" sse4_2") {
            // Three lanes of `crc32`, or folding with PCLMULQDQ where it timed faster (AMD's `crc32` is not pipelined).
            let expected = flags.contains(" pclmulqdq") ? ["sse4.2", "sse4.2+pclmul"] : ["sse4.2"]
            #expect(expected.contains(CRC32C.implementation), "\(CRC32C.implementation)")
        }
        #elseif arch(arm64)
        let flags = try String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)
        if flags.contains(" crc32") { #expect(CRC32C.implementation == "armv8-crc") }
        #endif
    }

    @Test func hexFormsAndParsing() {
        var crc = CRC32C()
        Array("123456789".utf8).withUnsafeBytes { crc.update($0) }
        #expect(crc.hex == "e3069283")
        #expect(crc.description == "crc32c:e3069283")
        #expect(CRC32C.hex(0x1F) == "0000001f")
        #expect(CRC32C.parse("e3069283") == 0xE306_9283)
        #expect(CRC32C.parse("0000001f") == 0x1F)
        let malformed = ["", "crc32c:0000001f", "e306928", "e30692830", "E3069283", "e306928g", "+3069283", "crc32c:"]
        for bad in malformed {
            #expect(CRC32C.parse(bad) == nil, "\(bad)")
        }
    }

    @Test func pieceCarriesExactlyOneChecksum() {
        #expect(PieceChecksum(.init(offset: 0, length: 1, crc32c: "e3069283")) == .crc32c(0xE306_9283))
        #expect(PieceChecksum(.init(offset: 0, length: 1, sha256: "ab")) == .sha256("ab"))
        var both = Checkpoint.Piece(offset: 0, length: 1, crc32c: "e3069283")
        both.sha256 = "ab"
        #expect(PieceChecksum(both) == nil)
        var neither = both
        neither.sha256 = nil
        neither.crc32c = nil
        #expect(PieceChecksum(neither) == nil)
        #expect(PieceChecksum(.init(offset: 0, length: 1, crc32c: "nothex!!")) == nil)
    }
}
