/// Redaction of URLs for logs and messages: presigned URLs carry credentials in their query.
public enum RedactedURL {
    /// The URL with its query and fragment replaced by `?<redacted>`; the URL itself is used intact.
    public static func redact(_ url: String) -> String {
        var text = url
        if let hash = text.firstIndex(of: "#") { text = String(text[..<hash]) }
        guard let q = text.firstIndex(of: "?") else { return text }
        return String(text[..<q]) + "?<redacted>"
    }

    /// The scheme in lower case, or nil when the URL has none.
    static func scheme(of url: String) -> String? {
        guard let colon = url.firstIndex(of: ":") else { return nil }
        let scheme = url[..<colon]
        guard !scheme.isEmpty, scheme.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == "." })
        else { return nil }
        return scheme.lowercased()
    }
}
