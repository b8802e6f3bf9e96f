import Foundation

/// A URL's `user:password@`, sent as curl sends it: taken out of the URL the client is given and sent as
/// `Authorization: Basic` (percent-escapes decoded first). Only to that URL: a redirect's Location carries
/// no credentials, so none follow it. Pure.
enum URLCredentials {
    /// `url` without its credentials, and the `Basic` value for them (nil when it has none, or when an
    /// escape in them is malformed: then the URL is sent without them and the server's 401 says so).
    static func split(_ url: String) -> (url: String, authorization: String?) {
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else { return (url, nil) }
        let start = url.index(colon, offsetBy: 3)
        let authority = url[start...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard let at = authority.lastIndex(of: "@") else { return (url, nil) }
        let plain = String(url[..<start]) + String(url[url.index(after: at)...])
        let parts = url[start..<at].split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard let user = ProxyServer.percentDecoded(parts[0]),
            let password = parts.count > 1 ? ProxyServer.percentDecoded(parts[1]) : ""
        else { return (plain, nil) }
        return (plain, Data("\(user):\(password)".utf8).base64EncodedString())
    }
}
