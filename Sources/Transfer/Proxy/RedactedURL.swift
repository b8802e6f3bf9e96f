/// Redaction of URLs for logs and messages: presigned URLs carry credentials in their query.
public enum RedactedURL {
    /// The URL with its query and fragment replaced by `?<redacted>` and a `user:password@` replaced by
    /// `<redacted>@`; the URL itself is used intact.
    public static func redact(_ url: String) -> String {
        var text = withoutCredentials(url)
        if let hash = text.firstIndex(of: "#") { text = String(text[..<hash]) }
        guard let q = text.firstIndex(of: "?") else { return text }
        return String(text[..<q]) + "?<redacted>"
    }

    /// The URL without its query and fragment: what stays the same when a presigned URL is signed again.
    static func withoutQuery(_ url: String) -> String {
        String(url.prefix { $0 != "?" && $0 != "#" })
    }

    /// What tells whether a partial file was written for a URL (`Checkpoint.url`, a multi-source record's
    /// sources): the URL without its credentials, query and fragment. A checkpoint keeps only this much of a URL
    /// (`redact`), so it holds no password and no presigned signature, and a URL signed again still matches.
    static func resumeKey(_ url: String) -> String {
        withoutQuery(withoutCredentials(url))
    }

    /// `scheme://user:password@host/...` with the credentials replaced by `<redacted>`.
    public static func withoutCredentials(_ url: String) -> String {
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else { return url }
        let start = url.index(colon, offsetBy: 3)
        let authority = url[start...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard let at = authority.lastIndex(of: "@") else { return url }
        return String(url[..<start]) + "<redacted>" + String(url[at...])
    }

    /// `scheme://user:password@host/...` with only the password replaced: `scheme://user:<redacted>@host/...`,
    /// as a proxy is shown everywhere (`ProxyServer.description`, a job's `proxy` and `via_proxy`).
    public static func withoutPassword(_ url: String) -> String {
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else { return url }
        let start = url.index(colon, offsetBy: 3)
        let authority = url[start...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard let at = authority.lastIndex(of: "@") else { return url }
        let userinfo = url[start..<at]
        guard let split = userinfo.firstIndex(of: ":") else { return url }
        return String(url[..<split]) + ":<redacted>" + String(url[at...])
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

/// The one check of a download URL, used by `get`, `add` and the API alike: http or https (any case), a
/// host, a port from 1 to 65535 when given, no spaces or control characters. Pure.
public enum DownloadURL {
    /// Nil when `url` is usable; otherwise what is wrong and how to fix it.
    public static func problem(_ url: String) -> String? {
        let shown = RedactedURL.redact(url)
        guard let scheme = RedactedURL.scheme(of: url), scheme == "http" || scheme == "https" else {
            return "\(shown) is not an http:// or https:// URL; give a full URL"
        }
        guard !url.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) else {
            return "\(shown) contains spaces or control characters; percent-encode them (%20)"
        }
        switch URLAuthority.parse(url) {
        case .success: break
        case .failure(let problem):
            switch problem {
            case .noHost: return "\(shown) has no host; write \(scheme)://HOST/PATH"
            case .unclosedIPv6: return "\(shown) has an unclosed IPv6 address"
            case .textAfterIPv6: return "\(shown) has text after its IPv6 address"
            case .badPort(let port): return "\(shown) has the port \"\(port)\"; a port is a number from 1 to 65535"
            case .ipv6Zone:
                return
                    "\(shown) names an IPv6 zone (%25...), which is not supported; use the server's global or unique-local address"
            }
        }
        return nil
    }
}
