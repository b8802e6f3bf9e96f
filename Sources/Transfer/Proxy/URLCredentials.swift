import Foundation

/// A URL's `user:password@`, sent as curl sends it: taken out of the URL the client is given and sent as
/// `Authorization: Basic` (percent-escapes decoded first). A redirect keeps them only within the same
/// scheme, host and port (`RedirectPolicy.carryingCredentials`). Pure.
enum URLCredentials {
    /// `url` without its credentials, and the `Basic` value for them (nil when it has none, or when an
    /// escape in them is malformed: then the URL is sent without them and the server's 401 says so).
    static func split(_ url: String) -> (url: String, authorization: String?) {
        guard case .success(let authority) = URLAuthority.parse(url), let userinfo = authority.userinfo,
            let separator = url.range(of: "://")
        else { return (url, nil) }
        let rest = url[separator.upperBound...].dropFirst(userinfo.count + 1)
        let plain = String(url[..<separator.upperBound]) + rest
        let parts = userinfo.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard let user = ProxyServer.percentDecoded(parts[0]),
            let password = parts.count > 1 ? ProxyServer.percentDecoded(parts[1]) : ""
        else { return (plain, nil) }
        return (plain, Data("\(user):\(password)".utf8).base64EncodedString())
    }
}
