import Foundation
import TestSupport
import Testing

/// What every thread of the binary costs before it runs any code of ours: its static TLS block, which glibc
/// places at the top of each thread's stack and zeroes. Three 64 KiB thread-local netlink buffers once made
/// it 197 KiB, about 1.7 MiB of anonymous memory for a `get` with nine threads (bench/README.md, "download").
@Suite(.needsBinary) struct ThreadMemoryTests {
    /// The memory size of the executable's PT_TLS segment; nil when it has none.
    static func staticTLSSize(of path: String) throws -> UInt64? {
        let data = try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped)
        func read<T: FixedWidthInteger>(_: T.Type, at offset: Int) throws -> T {
            guard offset >= 0, offset + MemoryLayout<T>.size <= data.count else {
                throw CocoaError(.fileReadCorruptFile)
            }
            var value = T.zero
            withUnsafeMutableBytes(of: &value) { $0.copyBytes(from: data[offset..<offset + MemoryLayout<T>.size]) }
            return T(littleEndian: value)
        }
        // ELF64, little-endian: e_phoff at 32, e_phentsize at 54, e_phnum at 56; p_type at 0, p_memsz at 40.
        guard data.count > 64, data.prefix(4).elementsEqual([0x7F, 0x45, 0x4C, 0x46]), data[4] == 2, data[5] == 1
        else { throw CocoaError(.fileReadCorruptFile) }
        let table = Int(try read(UInt64.self, at: 32))
        let entry = Int(try read(UInt16.self, at: 54))
        let count = Int(try read(UInt16.self, at: 56))
        for i in 0..<count where try read(UInt32.self, at: table + i * entry) == 7 {
            return try read(UInt64.self, at: table + i * entry + 40)
        }
        return nil
    }

    @Test func eachThreadsStaticTLSStaysSmall() throws {
        let size = try Self.staticTLSSize(of: RepoPaths.binary) ?? 0
        #expect(size < 16 << 10, "\(size) bytes of static TLS per thread: a large thread-local array is back")
    }
}
