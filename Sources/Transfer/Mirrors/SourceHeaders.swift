/// Mirrors and digests a server announces in its response headers: RFC 6249 `Link: <url>; rel=duplicate`,
/// RFC 3230 `Digest` and RFC 9530 `Repr-Digest`. Pure and lenient: what cannot be read is skipped.
enum SourceHeaders {
    /// A mirror from a `Link: <url>; rel=duplicate; pri=N; geo=xx` header.
    struct Duplicate: Sendable, Equatable {
        var url: String
        var priority: Int?
        var location: String?
    }

    /// The most duplicates `duplicates` returns.
    static let maxDuplicates = 32

    /// `Link` header values (possibly several comma-separated links per value; several values). Returns
    /// rel=duplicate links resolved against `base` when relative ("/path" or "path" forms), http/https only, at
    /// most 32, sorted like Metalink sources (`pri` ascending, none last), no URL twice.
    static func duplicates(linkValues: [String], base: String) -> [Duplicate] {
        var found: [Duplicate] = []
        var seen: Set<String> = []
        for value in linkValues {
            var scanner = LinkScanner(Array(value.utf8))
            while found.count < maxDuplicates, let link = scanner.next() {
                let rel = (link.parameters["rel"] ?? "").lowercased().split { $0 == " " || $0 == "\t" }
                guard rel.contains("duplicate"), let url = resolve(link.target, against: base),
                    seen.insert(url).inserted
                else { continue }
                let priority = link.parameters["pri"].flatMap { Metalink.decimal($0, max: 999_999) }.flatMap {
                    $0 >= 1 ? Int($0) : nil
                }
                let location = link.parameters["geo"].flatMap(Metalink.countryCode)
                found.append(Duplicate(url: url, priority: priority, location: location))
            }
        }
        return Metalink.sortedByPriority(found, \.priority)
    }

    /// Whole-representation digests from `Digest` (RFC 3230: `SHA-256=<base64>`, `SHA=<base64>` for sha-1,
    /// case-insensitive alg names, comma-separated) and `Repr-Digest` (RFC 9530 structured dict:
    /// `sha-256=:<base64>:, sha-512=:...:`). Unknown algorithms ignored; a value of the wrong length ignored.
    /// Within `Digest` the first usable value of a kind counts; within `Repr-Digest` the last member of a key
    /// (RFC 9651 dictionaries); `Repr-Digest` wins over `Digest`.
    static func digests(digestValues: [String], reprDigestValues: [String]) -> [Metalink.HashKind: [UInt8]] {
        var digests: [Metalink.HashKind: [UInt8]] = [:]
        for value in digestValues {
            for member in value.split(separator: ",") {
                guard let equals = member.firstIndex(of: "=") else { continue }
                let name = member[..<equals].trimmingBlanks.lowercased()
                let kind: Metalink.HashKind? =
                    switch name {
                    case "sha-256": .sha256
                    case "sha", "sha-1": .sha1
                    default: nil
                    }
                let encoded = member[member.index(after: equals)...].trimmingBlanks
                guard let kind, digests[kind] == nil, let bytes = base64(encoded), bytes.count == kind.byteCount
                else { continue }
                digests[kind] = bytes
            }
        }
        var members: [String: String] = [:]
        for value in reprDigestValues {
            for member in value.split(separator: ",") {
                guard let equals = member.firstIndex(of: "=") else { continue }
                let key = member[..<equals].trimmingBlanks.lowercased()
                // The value is a byte sequence `:base64:`, maybe followed by `;parameters`.
                let item = member[member.index(after: equals)...].prefix { $0 != ";" }
                members[key] = item.trimmingBlanks
            }
        }
        for (key, item) in members {
            let kind: Metalink.HashKind? =
                switch key {
                case "sha-256": .sha256
                case "sha": .sha1
                default: nil
                }
            guard let kind, item.count >= 2, item.hasPrefix(":"), item.hasSuffix(":"),
                let bytes = base64(item.dropFirst().dropLast()), bytes.count == kind.byteCount
            else { continue }
            digests[kind] = bytes
        }
        return digests
    }

    /// `reference` as an absolute http(s) URL, resolved against `base` (RFC 3986) when it is relative.
    private static func resolve(_ reference: String, against base: String) -> String? {
        guard !reference.isEmpty,
            reference.unicodeScalars.allSatisfy({ !$0.properties.isWhitespace && !Metalink.isControl($0) })
        else { return nil }
        if Metalink.isFetchableURL(reference) { return reference }
        // Another scheme (ftp:, magnet:, ...) before any `/`, `?` or `#` makes it absolute and unusable.
        let head = reference.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !head.contains(where: { $0 == ":" }), Metalink.isFetchableURL(base),
            let scheme = base.firstRange(of: "://")
        else { return nil }
        // The base's scheme and authority, and its path without query or fragment.
        let afterScheme = base[scheme.upperBound...]
        let authorityEnd = afterScheme.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? afterScheme.endIndex
        let origin = String(base[..<authorityEnd])
        let path = afterScheme[authorityEnd...].prefix { $0 != "?" && $0 != "#" }
        let resolved: String
        if reference.hasPrefix("//") {
            resolved = String(base[..<scheme.lowerBound]) + ":" + reference
        } else if reference.hasPrefix("/") {
            resolved = origin + reference
        } else if reference.hasPrefix("?") || reference.hasPrefix("#") {
            resolved = origin + path + reference
        } else {
            let directory = path.lastIndex(of: "/").map { path[...$0] } ?? "/"
            resolved = origin + Self.removingDotSegments(String(directory) + reference)
        }
        return Metalink.isFetchableURL(resolved) ? resolved : nil
    }

    /// A path with its `.` and `..` segments applied (RFC 3986 §5.2.4), query and fragment kept as they are.
    static func removingDotSegments(_ path: String) -> String {
        let end = path.firstIndex { $0 == "?" || $0 == "#" } ?? path.endIndex
        var out: [Substring] = []
        let segments = path[..<end].split(separator: "/", omittingEmptySubsequences: false)
        for (i, segment) in segments.enumerated() {
            let last = i == segments.count - 1
            switch segment {
            case ".":
                if last { out.append("") }
            case "..":
                if out.count > 1 { out.removeLast() }
                if last { out.append("") }
            default:
                out.append(segment)
            }
        }
        let joined = out.joined(separator: "/")
        return (joined.hasPrefix("/") ? joined : "/" + joined) + path[end...]
    }

    /// Standard base64 (RFC 4648 §4), `=` padding optional, unused bits zero; nil for anything else.
    static func base64(_ text: some StringProtocol) -> [UInt8]? {
        var chars = Array(text.utf8)
        var padding = 0
        while chars.last == UInt8(ascii: "="), padding < 2 {
            chars.removeLast()
            padding += 1
        }
        guard chars.count % 4 != 1, padding == 0 || (chars.count + padding) % 4 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(chars.count * 3 / 4)
        var bits: UInt32 = 0
        var held = 0
        for c in chars {
            let value: UInt8
            switch c {
            case 0x41...0x5A: value = c - 0x41
            case 0x61...0x7A: value = c - 0x61 + 26
            case 0x30...0x39: value = c - 0x30 + 52
            case UInt8(ascii: "+"): value = 62
            case UInt8(ascii: "/"): value = 63
            default: return nil
            }
            bits = bits << 6 | UInt32(value)
            held += 6
            if held >= 8 {
                held -= 8
                bytes.append(UInt8(truncatingIfNeeded: bits >> UInt32(held)))
                bits &= (1 << UInt32(held)) - 1
            }
        }
        return bits == 0 ? bytes : nil
    }
}

/// Reads the links of one `Link` value (RFC 8288 §3): `<target>; name=token; name="quoted"`, comma-separated.
private struct LinkScanner {
    struct Link {
        var target: String
        /// Lowercased names; the first occurrence of a name counts (RFC 8288 §3.3 for `rel`).
        var parameters: [String: String]
    }

    private let bytes: [UInt8]
    private var at = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The next well-formed link; a malformed one is skipped up to the next comma.
    mutating func next() -> Link? {
        while at < bytes.count {
            skip { $0 == 0x20 || $0 == 0x09 || $0 == 0x2C }
            guard at < bytes.count else { return nil }
            if let link = link() { return link }
            skip { $0 != 0x2C }
        }
        return nil
    }

    private mutating func link() -> Link? {
        guard bytes[at] == UInt8(ascii: "<"), let close = bytes[at...].firstIndex(of: UInt8(ascii: ">")) else {
            return nil
        }
        var link = Link(target: String(decoding: bytes[(at + 1)..<close], as: UTF8.self), parameters: [:])
        at = close + 1
        while true {
            skipSpace()
            guard at < bytes.count, bytes[at] != 0x2C else { return link }
            guard bytes[at] == UInt8(ascii: ";") else { return nil }
            at += 1
            skipSpace()
            let name = token().lowercased()
            skipSpace()
            var value = ""
            if at < bytes.count, bytes[at] == UInt8(ascii: "=") {
                at += 1
                skipSpace()
                if at < bytes.count, bytes[at] == UInt8(ascii: "\"") {
                    guard let quoted = quotedString() else { return nil }
                    value = quoted
                } else {
                    value = token()
                }
            }
            guard !name.isEmpty else { return nil }
            if link.parameters[name] == nil { link.parameters[name] = value }
        }
    }

    private mutating func token() -> String {
        let start = at
        skip { !(0x00...0x20).contains($0) && !";,=\"".utf8.contains($0) }
        return String(decoding: bytes[start..<at], as: UTF8.self)
    }

    /// A quoted-string at `at` with `\` escapes; nil when it does not end.
    private mutating func quotedString() -> String? {
        var value: [UInt8] = []
        at += 1
        while at < bytes.count {
            let c = bytes[at]
            at += 1
            if c == UInt8(ascii: "\"") { return String(decoding: value, as: UTF8.self) }
            if c == UInt8(ascii: "\\"), at < bytes.count {
                value.append(bytes[at])
                at += 1
            } else {
                value.append(c)
            }
        }
        return nil
    }

    private mutating func skipSpace() {
        skip { $0 == 0x20 || $0 == 0x09 }
    }

    private mutating func skip(while condition: (UInt8) -> Bool) {
        while at < bytes.count, condition(bytes[at]) { at += 1 }
    }
}

extension StringProtocol {
    /// Without the spaces and tabs at either end (header values' optional whitespace).
    var trimmingBlanks: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
