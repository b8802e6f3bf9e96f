import AsyncHTTPClient
import NIOCore

/// The optional HEAD request on a separate URL (presigned URLs are signed per method). It only saves
/// the first GET's round trip before segments start; any failure falls back to learning from the GET.
extension DownloadRun {
    func probeHead(_ headURL: String) async -> KnownObject? {
        var url = headURL
        var redirects = 0
        while true {
            var http = HTTPClientRequest.download(url, forwarded: nil, proxy: nil)
            http.method = .HEAD
            http.localAddress = download.localAddress
            guard let response = try? await client.execute(http, timeout: .seconds(30)) else { return nil }
            let head = ResponseHead(response)
            if (300..<400).contains(head.status), let location = head.location {
                redirects += 1
                guard case .success(let next) = RedirectPolicy.follow(from: url, location: location, count: redirects)
                else { return nil }
                url = next
                continue
            }
            guard head.status == 200, let total = head.contentLength, total > 0, total <= ObjectLimits.maxBytes,
                response.headers.first(name: "Accept-Ranges")?.lowercased() == "bytes", !head.validators.isEmpty
            else { return nil }
            logger.debug("learned from HEAD", metadata: ["bytes": "\(total)", "url": "\(RedactedURL.redact(url))"])
            return KnownObject(validators: head.validators, total: total)
        }
    }
}
