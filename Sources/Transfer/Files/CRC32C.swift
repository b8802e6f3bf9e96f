import CCRC32C

/// The CRC-32C (Castagnoli) of bytes fed in order: the checksum of each chunk of the partial file.
///
/// It finds torn or stale data after a crash, not an adversary's edits (the whole-file sha256 does that).
/// Runs on SSE 4.2 or the ARMv8 CRC instructions when the CPU has them (`implementation` says which).
struct CRC32C: Sendable, Equatable {
    /// The CRC-32C of everything fed so far (0 for nothing).
    private(set) var value: UInt32 = 0

    init() {}

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
