/// A Metalink file (RFC 5854 `.meta4`, or Metalink 3 `.metalink`): for each file, its size, digests, piece
/// digests and the mirrors that serve it. Pure: `parse` reads bytes, refuses hostile documents before any large
/// allocation, and says what is wrong with the line.
public struct Metalink: Sendable, Equatable {
    /// A digest algorithm a Metalink file may name that Meterwise can check.
    public enum HashKind: String, Sendable, Equatable, CaseIterable {
        /// SHA-256, 32 bytes.
        case sha256 = "sha-256"
        /// SHA-1, 20 bytes (weak; a sha-256 digest is preferred when there is one).
        case sha1 = "sha-1"
        /// Bytes of one digest.
        public var byteCount: Int { self == .sha256 ? 32 : 20 }
    }

    /// A mirror of a file.
    public struct Source: Sendable, Equatable {
        /// An http:// or https:// URL (other schemes and torrents are skipped).
        public var url: String
        /// Lower is preferred: v4 `priority` (1...999999), or v3 `preference` (0...100) as 101 - preference.
        public var priority: Int?
        /// ISO 3166-1 alpha-2 country code, lowercased.
        public var location: String?
    }

    /// The digests of consecutive pieces of a file.
    public struct Pieces: Sendable, Equatable {
        /// The algorithm of `hashes`.
        public var kind: HashKind
        /// Bytes in every piece but the last.
        public var length: Int64
        /// Raw digest bytes, one per piece, in file order.
        public var hashes: [[UInt8]]
    }

    /// One file the Metalink describes.
    public struct File: Sendable, Equatable {
        /// A plain file name: no directory, no leading dot.
        public var name: String
        /// Bytes, when given.
        public var size: Int64?
        /// Whole-file digests, raw bytes.
        public var hashes: [HashKind: [UInt8]]
        /// Piece digests, sha-256 preferred over sha-1.
        public var pieces: Pieces?
        /// Mirrors, priority ascending (none last), in document order otherwise; no URL twice.
        public var sources: [Source]
    }

    /// The files, in document order.
    public var files: [File]

    /// Largest accepted metalink document.
    public static let maxBytes = 16 << 20
    /// The namespace of Metalink 4 (RFC 5854).
    static let namespaceV4 = "urn:ietf:params:xml:ns:metalink"
    /// The namespace of Metalink 3.
    static let namespaceV3 = "http://www.metalinker.org/"

    /// Bounds on what a document may hold; tests lower them to reach them with small documents.
    struct Limits: Sendable {
        var files = 1000
        var urlsPerFile = 1000
        var pieces = 4 << 20
        var depth = 32
        var elements = 10_000_000
        var textBytes = 64 << 10
    }

    /// Reads a Metalink 4 or 3 document; `source` names it in errors.
    public static func parse(_ bytes: [UInt8], source: String) throws(TransferError) -> Metalink {
        try parse(bytes, source: source, limits: Limits())
    }

    static func parse(_ bytes: [UInt8], source: String, limits: Limits) throws(TransferError) -> Metalink {
        try screen(bytes, source: source)
        return Metalink(files: try MetalinkReader(source: source, limits: limits).read(bytes))
    }

    /// Refuses, before the XML parser sees them, documents that are too large, empty, not UTF-8, or that
    /// declare a DTD (the door of entity bombs and external entities).
    private static func screen(_ bytes: [UInt8], source: String) throws(TransferError) {
        guard !bytes.isEmpty else { throw failure(source, line: nil, "the file is empty") }
        guard bytes.count <= maxBytes else {
            throw failure(source, line: nil, "the file has \(bytes.count) bytes, more than the 16 MiB accepted")
        }
        for marker in ["<!DOCTYPE", "<!ENTITY"] {
            if let at = firstIndex(of: Array(marker.utf8), in: bytes) {
                throw failure(
                    source, line: lineNumber(at, in: bytes),
                    "`\(marker)` here: a Metalink file needs no DTD; entity declarations are refused (an entity bomb)"
                )
            }
        }
        // swift-corelibs-foundation's XMLParser dereferences NULL on a processing instruction without data
        // (`<?name?>`): every `<?` must start a name followed by white space.
        var from = 0
        while let at = firstIndex(of: [0x3C, 0x3F], in: bytes, from: from) {
            from = at + 2
            while from < bytes.count, !isXMLSpace(bytes[from]), bytes[from] != 0x3F, bytes[from] != 0x3E { from += 1 }
            guard from > at + 2, from < bytes.count, isXMLSpace(bytes[from]) else {
                throw failure(
                    source, line: lineNumber(at, in: bytes),
                    "`<?` here starts no `<?name data?>`: a processing instruction without data crashes the XML parser"
                )
            }
        }
        // libxml2 would decode UTF-16, UTF-7 or EBCDIC, where the markers above do not appear as such bytes.
        guard !bytes.contains(0), String(validating: bytes, as: UTF8.self) != nil else {
            throw failure(source, line: nil, "the file is not UTF-8 text")
        }
        if let encoding = declaredEncoding(bytes),
            !["utf-8", "utf8", "us-ascii", "ascii"].contains(encoding.lowercased())
        {
            throw failure(source, line: 1, "the file declares the encoding `\(shown(encoding))`, where UTF-8 is needed")
        }
    }

    /// The `encoding` of the XML declaration, if there is one; "" when it cannot be read.
    private static func declaredEncoding(_ bytes: [UInt8]) -> String? {
        let start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        guard bytes[start...].starts(with: Array("<?xml".utf8)), start + 5 < bytes.count,
            [0x20, 0x09, 0x0D, 0x0A].contains(bytes[start + 5])
        else { return nil }
        let end = firstIndex(of: Array("?>".utf8), in: bytes) ?? bytes.count
        let declaration = String(decoding: bytes[start..<max(start, end)], as: UTF8.self)
        guard let key = declaration.firstRange(of: "encoding") else { return nil }
        let rest = declaration[key.upperBound...].drop {
            $0 == " " || $0 == "=" || $0 == "\t" || $0 == "\r" || $0 == "\n"
        }
        guard let quote = rest.first, quote == "\"" || quote == "'" else { return "" }
        return String(rest.dropFirst().prefix { $0 != quote })
    }

    private static func firstIndex(of pattern: [UInt8], in bytes: [UInt8], from start: Int = 0) -> Int? {
        guard let first = pattern.first, start < bytes.count else { return nil }
        var at = start
        while let found = bytes[at...].firstIndex(of: first) {
            if bytes[found...].starts(with: pattern) { return found }
            at = found + 1
        }
        return nil
    }

    private static func lineNumber(_ offset: Int, in bytes: [UInt8]) -> Int {
        bytes[..<offset].reduce(1) { $1 == 0x0A ? $0 + 1 : $0 }
    }

    private static func isXMLSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0D || c == 0x0A }

    /// An error about the document `source`, at `line` when known, with what to do about it.
    static func failure(_ source: String, line: Int?, _ what: String) -> TransferError {
        let at = line.map { "\(source):\($0)" } ?? source
        return TransferError(
            .metalink,
            "\(at): \(what). Get a new .meta4 file from the mirror system, or download the file's URL without the Metalink."
        )
    }
}

extension Metalink.HashKind {
    /// The kind a Metalink `type` attribute names (v4 `sha-256`, v3 `sha256`); nil for others (md5, sha-512).
    init?(metalinkType type: String?) {
        switch type?.lowercased() {
        case "sha-256", "sha256": self = .sha256
        case "sha-1", "sha1": self = .sha1
        default: return nil
        }
    }
}

// The checks of values from outside, shared with SourceHeaders.
extension Metalink {
    /// The bytes `hex` spells, when it is exactly `count` bytes of hex digits (either case).
    static func bytes(hex: some StringProtocol, count: Int) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count == 2 * count else { return nil }
        var bytes = [UInt8](repeating: 0, count: count)
        for i in 0..<count {
            guard let high = nibble(digits[2 * i]), let low = nibble(digits[2 * i + 1]) else { return nil }
            bytes[i] = high << 4 | low
        }
        return bytes
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x41...0x46: c - 0x41 + 10
        case 0x61...0x66: c - 0x61 + 10
        default: nil
        }
    }

    /// A decimal number of ASCII digits only (no sign) from 0 to `max`.
    static func decimal(_ text: some StringProtocol, max: Int64) -> Int64? {
        guard !text.isEmpty else { return nil }
        var value: Int64 = 0
        for c in text.utf8 {
            guard (0x30...0x39).contains(c) else { return nil }
            value = value * 10 + Int64(c - 0x30)
            guard value <= max else { return nil }
        }
        return value
    }

    /// `text` when it is two ASCII letters, lowercased.
    static func countryCode(_ text: String) -> String? {
        let letters = Array(text.utf8)
        guard letters.count == 2, letters.allSatisfy({ (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) })
        else { return nil }
        return text.lowercased()
    }

    /// Whether `url` is one Meterwise can fetch: http:// or https:// with a host (and a port, if any, of 1 to 5
    /// digits up to 65535), at most 4096 bytes, no whitespace or control character.
    static func isFetchableURL(_ url: String) -> Bool {
        guard url.utf8.count <= 4096,
            url.unicodeScalars.allSatisfy({ !$0.properties.isWhitespace && !isControl($0) })
        else { return false }
        let lower = url.lowercased()
        let scheme = lower.hasPrefix("http://") ? 7 : lower.hasPrefix("https://") ? 8 : 0
        guard scheme > 0 else { return false }
        let bytes = Array(url.utf8)
        let end = bytes[scheme...].firstIndex { $0 == 0x2F || $0 == 0x3F || $0 == 0x23 } ?? bytes.count  // / ? #
        let host = bytes[scheme..<end].lastIndex(of: 0x40).map { $0 + 1 } ?? scheme  // after userinfo@
        let port: Int
        if host < end, bytes[host] == 0x5B {  // [IPv6]
            guard let close = bytes[host..<end].firstIndex(of: 0x5D), close > host + 1 else { return false }
            port = close + 1
        } else {
            port = bytes[host..<end].firstIndex(of: 0x3A) ?? end
            guard port > host else { return false }
        }
        guard port < end else { return true }
        let digits = bytes[(port + 1)...].prefix(end - port - 1)
        return bytes[port] == 0x3A
            && (digits.isEmpty
                || (digits.count <= 5 && decimal(String(decoding: digits, as: UTF8.self), max: 65535) != nil))
    }

    /// A C0 or C1 control character, or DEL.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// `items` by priority ascending (nil last), keeping document order among equals.
    static func sortedByPriority<Item>(_ items: [Item], _ priority: (Item) -> Int?) -> [Item] {
        items.enumerated().sorted { a, b in
            let (pa, pb) = (priority(a.element) ?? .max, priority(b.element) ?? .max)
            return pa != pb ? pa < pb : a.offset < b.offset
        }.map(\.element)
    }

    /// `text` made safe to print in a message: control characters escaped, at most 80 characters.
    static func shown(_ text: some StringProtocol) -> String {
        var out = ""
        for scalar in text.unicodeScalars.prefix(80) {
            out += isControl(scalar) ? scalar.escaped(asASCII: true) : String(scalar)
        }
        return text.unicodeScalars.count > 80 ? out + "..." : out
    }
}
