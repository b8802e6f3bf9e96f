import CCRC32C

/// The CRC-32C (Castagnoli) of bytes fed in order: the checksum of each chunk of the partial file.
///
/// It finds torn or stale data after a crash, not an adversary's edits (the whole-file sha256 does that).
/// Runs on SSE 4.2 or the ARMv8 CRC instructions when the CPU has them (`implementation` says which).
struct CRC32C: Sendable, Equatable {
    /// The CRC-32C of everything fed so far (0 for nothing).
    private(set) var value: UInt32 = 0

    init() {}

    /// A CRC-32C already computed (`value` of bytes fed elsewhere).
    init(value: UInt32) { self.value = value }

    /// The CRC-32C of `a ‖ b` from the CRC-32C of `a` (`first`) and of `b` (`second`, `length` bytes), without
    /// the bytes: `first` times x^(8·length) modulo the polynomial, plus `second` (the finished values' pre- and
    /// post-conditioning cancel out). Two runs of the partial file that meet become one this way.
    static func combine(_ first: UInt32, _ second: UInt32, length: Int64) -> UInt32 {
        guard length > 0 else { return first }
        var power: UInt32 = 1 << 31  // x^0
        var square = 3  // x2n[3] = x^8: one byte
        var n = UInt64(length)
        while n != 0 {
            if n & 1 != 0 { power = multiply(x2n[square & 31], power) }
            n >>= 1
            square += 1
        }
        return multiply(power, first) ^ second
    }

    /// The reflected polynomial of CRC-32C.
    private static let polynomial: UInt32 = 0x82F6_3B78

    /// `a` times `b` modulo the polynomial, in the reflected order (bit 31 is x^0).
    private static func multiply(_ a: UInt32, _ b: UInt32) -> UInt32 {
        var m: UInt32 = 1 << 31
        var b = b
        var product: UInt32 = 0
        while m != 0 {
            if a & m != 0 {
                product ^= b
                if a & (m - 1) == 0 { break }
            }
            m >>= 1
            b = b & 1 != 0 ? (b >> 1) ^ polynomial : b >> 1
        }
        return product
    }

    /// x^(2^k) modulo the polynomial, k = 0...31.
    private static let x2n: [UInt32] = {
        var table = [UInt32](repeating: 0, count: 32)
        var p: UInt32 = 1 << 30  // x^1
        for k in 0..<32 {
            table[k] = p
            p = multiply(p, p)
        }
        return table
    }()

    /// Appends `raw` to the bytes checked.
    mutating func update(_ raw: UnsafeRawBufferPointer) {
        guard let base = raw.baseAddress, !raw.isEmpty else { return }
        value = mw_crc32c_update(value, base, raw.count)
    }

    /// `value` as 8 lower-case hex digits, the form a checkpoint stores.
    var hex: String { Self.hex(value) }

    /// `crc32c:xxxxxxxx`.
    var description: String { "crc32c:" + hex }

    static func hex(_ value: UInt32) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: 8 - text.count) + text
    }

    /// The value of exactly 8 lower-case hex digits (the checkpoint's form); nil for anything else (a
    /// checkpoint is untrusted input).
    static func parse(_ text: String) -> UInt32? {
        let digits = text.utf8
        let decimal = UInt8(ascii: "0")...UInt8(ascii: "9")
        let letters = UInt8(ascii: "a")...UInt8(ascii: "f")
        guard digits.count == 8, digits.allSatisfy({ decimal.contains($0) || letters.contains($0) }) else { return nil }
        return UInt32(String(decoding: digits, as: UTF8.self), radix: 16)
    }

    /// The instructions in use on this CPU: `sse4.2`, `armv8-crc` or `software`.
    static var implementation: String { String(cString: mw_crc32c_implementation()) }
}

extension CRC32C: CustomStringConvertible {}
