#if canImport(Glibc)
import Glibc
#endif

/// The checkpoint of a download from several sources (docs/mirrors.md): the pieces of the partial file that
/// were verified, and what they were verified against. A resumed run checks each of them again and trusts
/// only those; the rest is fetched. A record for another length, piece length, check or file is not used.
struct PieceRecord: Sendable, Equatable {
    static let magic = "meterwise-pieces 1"
    /// The largest record read (4 Mi pieces of 4 bytes, in hex, and the header).
    static let maxBytes = 40 << 20

    var total: Int64
    var pieceLength: Int64
    /// `PieceCheck.name`.
    var check: String
    /// The whole file's sha-256 or sha-1 in hex when known, else "-": a record for another file is not used.
    var identity: String
    var verified: [Bool]
    /// Per piece, the CRC-32C recorded when the check is `crc32c` (0 for pieces not verified); empty otherwise.
    var crcs: [UInt32] = []
    /// Each source's validator when the record was written (URL, its credentials and query redacted → `etag` and
    /// `last-modified`, "" for none): a resumed run without piece hashes starts over when a source says the file
    /// changed.
    var sources: [String: String] = [:]
    /// Bytes written of pieces not yet verified (pieces left part way), each with its CRC-32C: a resumed run keeps
    /// those that still match and fetches only the rest of their pieces.
    var written: [Written] = []

    struct Written: Sendable, Equatable {
        var range: Range<Int64>
        var crc: UInt32
    }

    /// The most spans of pieces left part way a record keeps (a few per connection in practice).
    static let maxWritten = 4096

    func encoded() -> [UInt8] {
        var text = "\(Self.magic)\ntotal \(total)\npiece-length \(pieceLength)\ncheck \(check)\nidentity \(identity)\n"
        var bits = [UInt8](repeating: 0, count: (verified.count + 7) / 8)
        for (i, v) in verified.enumerated() where v { bits[i / 8] |= 1 << UInt8(i % 8) }
        text += "verified " + Self.hex(bits) + "\n"
        if !crcs.isEmpty {
            text += "crc32c " + crcs.map { CRC32C.hex($0) }.joined() + "\n"
        }
        for (url, validator) in sources.sorted(by: { $0.key < $1.key })
        where !url.utf8.contains(where: { $0 < 0x20 }) && !validator.utf8.contains(where: { $0 < 0x20 && $0 != 0x09 }) {
            text += "source \(url)\t\(validator)\n"
        }
        for span in written.prefix(Self.maxWritten) {
            text += "written \(span.range.lowerBound) \(span.range.upperBound) \(CRC32C.hex(span.crc))\n"
        }
        return Array(text.utf8)
    }

    /// The record in `bytes`, or nil when it is not one (a torn write, another version).
    static func decode(_ bytes: [UInt8]) -> PieceRecord? {
        guard let text = String(validating: bytes, as: UTF8.self) else { return nil }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count >= 7, lines[0] == magic else { return nil }
        func value(_ line: Int, _ key: String) -> Substring? {
            let prefix = key + " "
            guard lines[line].hasPrefix(prefix) else { return nil }
            return lines[line].dropFirst(prefix.count)
        }
        guard let total = value(1, "total").flatMap({ Int64($0) }), total >= 0, total <= ObjectLimits.maxBytes,
            let length = value(2, "piece-length").flatMap({ Int64($0) }), length > 0,
            let check = value(3, "check"), let identity = value(4, "identity"),
            let bitsHex = value(5, "verified")
        else { return nil }
        let count = total == 0 ? 0 : Int((total - 1) / length) + 1
        // A record that is its own stays small: 4 Mi pieces at most (a Metalink file's bound).
        guard count <= 4 << 20, let bits = Metalink.bytes(hex: bitsHex, count: (count + 7) / 8) else { return nil }
        let verified = (0..<count).map { bits[$0 / 8] & (1 << UInt8($0 % 8)) != 0 }
        var record = PieceRecord(
            total: total, pieceLength: length, check: String(check), identity: String(identity), verified: verified)
        for line in lines.dropFirst(6) where line.hasPrefix("source ") {
            let rest = line.dropFirst("source ".count)
            guard let tab = rest.firstIndex(of: "\t") else { return nil }
            record.sources[String(rest[..<tab])] = String(rest[rest.index(after: tab)...])
        }
        for line in lines.dropFirst(6) where line.hasPrefix("written ") {
            let fields = line.dropFirst("written ".count).split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count == 3, let start = Int64(fields[0]), let end = Int64(fields[1]),
                start >= 0, start < end, end <= total, let crc = CRC32C.parse(String(fields[2])),
                record.written.count < maxWritten
            else { return nil }
            record.written.append(Written(range: start..<end, crc: crc))
        }
        if let crcHex = value(6, "crc32c") {
            guard crcHex.utf8.count == count * 8 else { return nil }
            let digits = Array(crcHex.utf8)
            var crcs: [UInt32] = []
            crcs.reserveCapacity(count)
            for i in 0..<count {
                guard let v = UInt32(String(decoding: digits[(i * 8)..<(i * 8 + 8)], as: UTF8.self), radix: 16)
                else { return nil }
                crcs.append(v)
            }
            record.crcs = crcs
        }
        return record
    }

    static func read(_ directory: OutputDirectory, _ name: String) -> PieceRecord? {
        guard case .own(let fd) = directory.openOwn(name, writable: false) else { return nil }
        defer { close(fd) }
        guard let bytes = FileIO.readAll(fd: fd, limit: maxBytes + 1), bytes.count <= maxBytes else { return nil }
        return decode(bytes)
    }

    /// Writes the record (a new file, synced, renamed over the old one).
    func write(_ directory: OutputDirectory, _ name: String) throws(TransferError) {
        let temporary = name + ".tmp"
        try? directory.remove(temporary)
        guard let fd = try directory.createIfAbsent(temporary, mode: 0o600) else {
            throw TransferError(
                .outputBusy, "\(directory.display(temporary)) appeared meanwhile; another program writes there.")
        }
        let content = encoded()
        let what = "write the checkpoint \(directory.display(name))"
        let written = content.withUnsafeBytes { raw -> Bool in
            (try? FileIO.pwriteAll(fd: fd, raw, at: 0, what: what)) != nil
        }
        guard written, fdatasync(fd) == 0 else {
            let error = FileIO.error(what)
            close(fd)
            try? directory.remove(temporary)
            throw error
        }
        close(fd)
        try directory.rename(temporary, to: name, replace: true)
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
