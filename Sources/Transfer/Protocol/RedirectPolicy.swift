#if canImport(FoundationEssentials)
import struct FoundationEssentials.URL
#else
import struct Foundation.URL
#endif

/// Where a redirect leads, or why it is refused: at most 10 redirects, http(s) only, never from https
/// to http. Pure.
public enum RedirectPolicy {
    /// The most redirects followed for one request.
    public static let maxRedirects = 10

    /// The absolute URL to follow `location` to from `url`, the `count`-th redirect of this request.
    public static func follow(from url: String, location: String, count: Int) -> Result<String, TransferError> {
        guard count <= maxRedirects else {
            return .failure(TransferError(.tooManyRedirects, "More than \(maxRedirects) redirects; check the URL."))
        }
        guard let base = URL(string: url), let next = URL(string: location, relativeTo: base)?.absoluteURL,
            let scheme = next.scheme?.lowercased(), scheme == "http" || scheme == "https"
        else {
            return .failure(TransferError(.invalidURL, "The server redirected to an unusable Location; check the URL."))
        }
        if RedactedURL.scheme(of: url) == "https" && scheme == "http" {
            return .failure(
                TransferError(
                    .insecureRedirect,
                    "Refused a redirect from https to http (\(RedactedURL.redact(next.absoluteString))); use a URL that stays on https."
                )
            )
        }
        return .success(carryingCredentials(from: url, to: next.absoluteString))
    }

    /// `target` with `url`'s `user:password@` when it names none and is the same scheme, host and port, as curl
    /// does: a server that redirects within itself (nginx makes every Location absolute) keeps the login;
    /// another host, port or scheme never sees it.
    static func carryingCredentials(from url: String, to target: String) -> String {
        guard case .success(let from) = URLAuthority.parse(url), let userinfo = from.userinfo,
            case .success(let to) = URLAuthority.parse(target), to.userinfo == nil, to.scheme == from.scheme,
            to.host == from.host, to.effectivePort == from.effectivePort,
            let separator = target.range(of: "://")
        else { return target }
        return String(target[..<separator.upperBound]) + userinfo + "@" + String(target[separator.upperBound...])
    }
}
