import AsyncHTTPClient
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// One GET outside the segmented downloader (a delta's ranges, a mirror's probe and pieces, a Metalink
/// file): redirects followed by `RedirectPolicy`, through the download's proxy as its segments go, from the
/// download's local address, with its no-progress timeout.
struct RequestSender: Sendable {
    let download: Download
    let client: HTTPClient
    let forwarder: HTTPClient?

    struct Answer {
        var response: HTTPClientResponse
        /// The URL that answered, after redirects.
        var url: String
        /// Mirrors and digests the responses on the way announced (a redirector's 302 too).
        var announced: Announced
    }

    func get(_ url: String, range: String?, validators: Validators?, headers: [(String, String)] = [])
        async throws(TransferError) -> Answer
    {
        let request = download.request
        var url = url
        var redirects = 0
        var announced = Announced()
        var askedAgain = 0
        while true {
            // Every URL asked, a redirect's too, is one the caller lets the download reach (`judgeSource`).
            if let judge = request.judgeSource, case .refuse(let why) = await judge(url) {
                throw TransferError(.linkNotAllowed, "Not asking \(RedactedURL.redact(url)): \(why).")
            }
            let proxy = request.proxy.server(for: url)
            let forwarded = forwarder == nil ? nil : proxy.flatMap { ForwardedRequest.make(url, through: $0) }
            var http = HTTPClientRequest.download(url, forwarded: forwarded, proxy: proxy)
            if let range { http.headers.add(name: "Range", value: range) }
            for (name, value) in (validators?.preconditionHeaders ?? []) + headers {
                http.headers.add(name: name, value: value)
            }
            http.localAddress = download.localAddress
            let response: HTTPClientResponse
            do {
                response = try await (forwarded == nil ? client : forwarder ?? client).execute(
                    http, timeout: .seconds(Int64(request.noProgressTimeout.secondsDouble)))
            } catch {
                if askedAgain < Self.askAgainAtOnce, Self.endedBeforeAnswer(error) {
                    askedAgain += 1
                    continue
                }
                throw TransferError(
                    .retriesExhausted,
                    "The request for \(RedactedURL.redact(url))\(proxy.map { " through the proxy \($0)" } ?? "") failed: \(FailureText.describe(error)).",
                    cause: error)
            }
            announced.read(response.headers, from: url)
            let status = Int(response.status.code)
            guard [301, 302, 303, 307, 308].contains(status), let location = response.headers.first(name: "Location")
            else { return Answer(response: response, url: url, announced: announced) }
            redirects += 1
            switch RedirectPolicy.follow(from: url, location: location, count: redirects) {
            case .success(let next): url = next
            case .failure(let error): throw error
            }
        }
    }

    /// How many times a request whose connection ended before any answer (`endedBeforeAnswer`) is asked again at
    /// once: the pool may hold several connections the server gave up at the same moment (its keep-alive timer
    /// closes each idle one), and the next one taken may be another of them.
    static let askAgainAtOnce = 3

    /// Whether `error` is a connection that ended before any answer came: most often a kept-alive connection the
    /// server or proxy gave up as the request went out (its keep-alive timer). The GET is asked again at once
    /// (`askAgainAtOnce` times at most), as curl does with a reused connection, rather than counted as the source
    /// failing and said as a retry.
    static func endedBeforeAnswer(_ error: any Error) -> Bool {
        if let client = error as? HTTPClientError, client == .remoteConnectionClosed { return true }
        if let io = error as? IOError, io.errnoCode == ECONNRESET || io.errnoCode == EPIPE { return true }
        return false
    }
}
