#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A `.zsync` control file as zsyncmake writes it (docs/delta.md): a header of `Key: value` lines up to
/// an empty line, then per block of the target its weak (rolling) checksum and the prefix of its MD4.
/// Pure: `parse` checks every number before use and says what is wrong, with the line.
public struct ZsyncControl: Sendable, Equatable {
    /// The largest block accepted (zsyncmake picks 2 KiB or 4 KiB; `-b` allows other powers of two).
    public static let maxBlockSize = 1 << 20
    /// The smallest block accepted.
    public static let minBlockSize = 256
    /// The most blocks accepted (16 GiB at 4 KiB): bounds the memory the checksums take (20 bytes each).
    public static let maxBlocks = 1 << 22
    /// The largest header accepted.
    static let maxHeaderBytes = 64 << 10

    /// The `zsync:` version that made the file.
    public var version: String
    /// `Filename:`, informational.
    public var filename: String?
    /// `Blocksize:`, a power of two.
    public var blockSize: Int
    /// `Length:`, the target's length in bytes.
    public var length: Int64
    /// zsync's `seq_matches`: 1, or 2 when a block only counts next to its matching neighbour.
    public var sequenceMatches: Int
    /// Bytes of the weak checksum kept per block (1...4).
    public var weakBytes: Int
    /// Bytes of the MD4 kept per block (3...16).
    public var strongBytes: Int
    /// `URL:` lines, as written (relative to the control file's URL or absolute).
    public var urls: [String]
    /// `SHA-1:` of the whole target, lower-case hex.
    public var sha1: String
    /// The weak checksum of each block, (a << 16 | b) masked to `weakBytes`.
    public var weak: [UInt32]
    /// The stored MD4 prefix of each block, 16 bytes per block (zero-filled past `strongBytes`).
    public var strong: [UInt8]

    /// Blocks in the target.
    public var blockCount: Int { Int((length + Int64(blockSize) - 1) / Int64(blockSize)) }

    /// The mask of (a << 16 | b) that `weakBytes` keeps: zsyncmake writes the last bytes of a, b in
    /// network order.
    public var weakMask: UInt32 { weakBytes >= 4 ? .max : (UInt32(1) << (8 * UInt32(weakBytes))) - 1 }

    /// The byte range of block `index` in the target.
    public func range(ofBlock index: Int) -> Range<Int64> {
        let start = Int64(index) * Int64(blockSize)
        return start..<min(start + Int64(blockSize), length)
    }

    /// Reads a control file; `source` names it in errors.
    public static func parse(_ data: [UInt8], source: String) throws(TransferError) -> ZsyncControl {
        func bad(_ line: Int?, _ what: String) -> TransferError {
            let at = line.map { "\(source):\($0)" } ?? source
            return TransferError(
                .controlFile,
                "\(at): \(what). The file is not a control file zsyncmake wrote for this URL; make it again with `zsyncmake`, or download without --zsync."
            )
        }
        // The header: lines up to the first empty one.
        var fields: [(key: String, value: String, line: Int)] = []
        var at = 0
        var line = 0
        var ended = false
        while at < data.count {
            guard at < maxHeaderBytes else { throw bad(line + 1, "the header is longer than 64 KiB") }
            let end = data[at...].firstIndex(of: 0x0A) ?? data.count
            line += 1
            var bytes = data[at..<end]
            if bytes.last == 0x0D { bytes = bytes.dropLast() }
            at = min(end + 1, data.count)
            if bytes.isEmpty {
                ended = end < data.count
                break
            }
            guard let text = String(validating: bytes, as: UTF8.self), let colon = text.firstIndex(of: ":") else {
                throw bad(line, "a header line is not `Key: value`")
            }
            let key = String(text[..<colon])
            let value = text[text.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            fields.append((key, value, line))
        }
        guard ended else { throw bad(nil, "the header has no end (no empty line before the checksums)") }
        func field(_ key: String) -> (value: String, line: Int)? {
            fields.first { $0.key.lowercased() == key.lowercased() }.map { ($0.value, $0.line) }
        }
        for key in ["zsync", "Blocksize", "Length", "Hash-Lengths", "SHA-1"] {
            let lines = fields.filter { $0.key.lowercased() == key.lowercased() }
            if lines.count > 1 { throw bad(lines[1].line, "`\(key):` appears more than once") }
        }
        guard let version = field("zsync") else { throw bad(1, "there is no `zsync:` line") }
        guard let sizeField = field("Blocksize") else { throw bad(nil, "there is no `Blocksize:` line") }
        guard sizeField.value.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let blockSize = Int(sizeField.value),
            blockSize >= minBlockSize, blockSize <= maxBlockSize,
            blockSize & (blockSize - 1) == 0
        else {
            throw bad(sizeField.line, "Blocksize `\(sizeField.value)` is not a power of two from 256 to 1048576")
        }
        guard let lengthField = field("Length") else { throw bad(nil, "there is no `Length:` line") }
        guard lengthField.value.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let length = Int64(lengthField.value),
            length >= 0, length <= ObjectLimits.maxBytes
        else {
            throw bad(
                lengthField.line, "Length `\(lengthField.value)` is not a size from 0 to \(ObjectLimits.maxBytes)")
        }
        guard let hashField = field("Hash-Lengths") else { throw bad(nil, "there is no `Hash-Lengths:` line") }
        let parts = hashField.value.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 3, let seq = parts[0], let weakBytes = parts[1], let strongBytes = parts[2],
            (1...2).contains(seq), (1...4).contains(weakBytes), (3...16).contains(strongBytes)
        else {
            throw bad(
                hashField.line,
                "Hash-Lengths `\(hashField.value)` is not sequence (1-2), weak bytes (1-4), strong bytes (3-16)")
        }
        guard let shaField = field("SHA-1") else { throw bad(nil, "there is no `SHA-1:` line") }
        let sha1 = shaField.value.lowercased()
        guard sha1.utf8.count == 40, sha1.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else { throw bad(shaField.line, "SHA-1 `\(shaField.value.prefix(60))` is not 40 hex digits") }
        let blocks = Int((length + Int64(blockSize) - 1) / Int64(blockSize))
        guard blocks <= maxBlocks else {
            throw bad(
                lengthField.line, "\(blocks) blocks are more than the \(maxBlocks) accepted; use a larger Blocksize")
        }
        let perBlock = weakBytes + strongBytes
        let body = data.count - at
        guard body == blocks * perBlock else {
            throw bad(
                nil,
                "the checksums take \(body) bytes where \(blocks) blocks of \(perBlock) bytes need \(blocks * perBlock) (the file is cut short or has bytes added)"
            )
        }
        var weak = [UInt32](repeating: 0, count: blocks)
        var strong = [UInt8](repeating: 0, count: blocks * 16)
        data.withUnsafeBufferPointer { raw in
            var p = at
            for b in 0..<blocks {
                var w: UInt32 = 0
                for k in 0..<weakBytes { w = w << 8 | UInt32(raw[p + k]) }
                weak[b] = w
                p += weakBytes
                for k in 0..<strongBytes { strong[b * 16 + k] = raw[p + k] }
                p += strongBytes
            }
        }
        return ZsyncControl(
            version: version.value, filename: field("Filename")?.value, blockSize: blockSize, length: length,
            sequenceMatches: seq, weakBytes: weakBytes, strongBytes: strongBytes,
            urls: fields.filter { $0.key.lowercased() == "url" }.map(\.value), sha1: sha1, weak: weak, strong: strong)
    }
}
