import AsyncHTTPClient

extension DownloadRun {
    /// Whether `url`, which refused the partial's validator with a 412 where a redirect led (an
    /// `Interception.Sign.refusalFromElsewhere`), serves an object of its own: asked for its first byte with no
    /// validator, it answers 206 with a length that is not a tiny fraction of the object's, and no page. Then the
    /// download's URL leads to another version of the file (a "latest" link moved on), not to a portal's page, and
    /// the download starts over (after the content check: the same bytes under another ETag go on).
    func servesAnObject(at url: String, known: KnownObject?, board: DownloadBoard) async -> Bool {
        let sender = RequestSender(download: download, client: client, forwarder: forwarder)
        guard let answer = try? await sender.get(url, range: "bytes=0-0", validators: nil) else { return false }
        let response = answer.response
        board.addHead(bytes: Self.headBytes(response))
        var body = 0
        do {
            for try await part in response.body {
                body += part.readableBytes
                if body > 64 << 10 { break }
            }
        } catch {}
        board.received(body)
        let head = ResponseHead(response)
        guard head.status == 206, answer.url == url, !Interception.isHTML(head.contentType),
            !head.validators.isEmpty,
            let text = head.contentRange, let range = ContentRange(header: text), range.first == 0,
            let total = range.total
        else { return false }
        return known?.total.map { !Interception.isTiny(total, of: $0) } ?? true
    }
}
