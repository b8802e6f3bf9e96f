/// The file name a download is saved under when the user names none: the last part of the URL's path.
/// `meterwise get` and `meterwise add` both use it, so they agree on every URL.
public enum OutputName {
    /// The last non-empty path component of `url`, without query or fragment, taken literally (percent
    /// escapes are not decoded, so `%2e%2e` is a harmless file name); nil when there is none usable: no
    /// path, only slashes, `.`, `..`, a dot-file, or longer than 255 bytes.
    public static func from(url: String) -> String? {
        var path = Substring(url)
        if let scheme = path.firstRange(of: "://") { path = path[scheme.upperBound...] }
        if let end = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = path[..<end] }
        guard let slash = path.firstIndex(of: "/") else { return nil }
        guard let name = path[slash...].split(separator: "/").last.map(String.init) else { return nil }
        guard !name.isEmpty, !name.hasPrefix("."), !name.contains("\0"), name.utf8.count <= 255 else { return nil }
        return name
    }
}

/// An expected sha256 as the user gives it: 64 hex digits, any case.
public enum ExpectedSHA256 {
    /// What to write instead of a bad value.
    public static let hint = "the sha256 takes 64 hex digits, e.g. the first word of sha256sum's output"

    /// The digest in lower case, or nil when `text` is not 64 hex digits.
    public static func parse(_ text: String) -> String? {
        guard text.utf8.count == 64, text.utf8.allSatisfy({ isHexDigit($0) }) else { return nil }
        return text.lowercased()
    }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }
}
