/// A misbehaviour the range server can inject; each one is a row of the downloader's test table.
public enum RangeFault: Sendable {
    /// Answer 200 with the whole object to every Range request.
    case ignoreRange
    /// Ignore If-Match, If-Unmodified-Since and If-Range: a changed object is served as 206 with its
    /// new ETag (what some S3-compatible servers do with If-Range).
    case ignorePreconditions
    /// Answer the next `times` ranged requests that start after 0 with a 206 starting `by` bytes earlier.
    case earlierStart(by: Int64, times: Int)
    /// After `afterBytes` body bytes in total, replace the object by `with` (new ETag) and close the
    /// connection that was serving.
    case replace(afterBytes: Int64, with: RangeContent)
    /// Send another strong ETag with every response for the same bytes (some CDNs and object-store gateways
    /// do). `honoursIfMatch`: If-Match is compared with the new ETag, so it always fails (412); otherwise it is
    /// ignored. `lastModified`: Last-Modified is sent (and stays the same) or left out.
    case changingETag(honoursIfMatch: Bool, lastModified: Bool)
    /// Send the ETag as weak (`W/"..."`).
    case weakETag
    /// Send neither ETag nor Last-Modified.
    case noValidators
    /// Close the connection after `after` body bytes, `times` responses in a row (Content-Length
    /// promises more).
    case truncate(after: Int64, times: Int)
    /// Reset the connection (TCP RST) after `after` body bytes, `times` responses in a row.
    case reset(after: Int64, times: Int)
    /// Send the body at about `bytesPerSecond` per response.
    case throttle(bytesPerSecond: Int)
    /// Answer 503 with `Retry-After: retryAfter` to the next `times` requests.
    case unavailable(retryAfter: Int, times: Int)
    /// Answer 416 to the next `times` ranged requests.
    case rangeNotSatisfiable(times: Int)
    /// Claim this complete length in every Content-Range (a hostile or broken server's number).
    case claimTotal(Int64)
    /// Send `Content-Encoding: value` with every body (it is still the raw bytes).
    case contentEncoding(String)
    /// Send no Content-Length and no Content-Range: a body of unknown length (chunked), ranges ignored.
    case noLength
    /// Be a captive portal: every request is answered with the sign-in page (`text/html`, no validator), after a
    /// 302 to `/login` when `redirect` (a hotel's portal), in place otherwise; `/login` itself is the page.
    case captivePortal(redirect: Bool)
    /// Answer every request with a 302 to `location` (a download site sending to its CDN).
    case redirect(to: String)
    /// Answer 511 Network Authentication Required with the sign-in page (RFC 6585's portal status).
    case networkAuthenticationRequired
    /// Read nothing while a response is being sent (a client's TLS `close_notify` or FIN goes unseen); a response
    /// that carries the object's last byte says `Connection: close`, and then the server never reads that
    /// connection again and never closes it: no `close_notify`, no FIN. A peer a client must never wait on.
    case mute
    /// Answer a range with at most this many bytes: a valid 206 for the first part of what was asked (some
    /// CDNs cap the size of a range).
    case capRanges(Int64)
    /// Send at about `bytesPerSecond` the responses whose body starts at byte `start` (one slow segment), after
    /// their first `burst` bytes at once (a server whose rate limit starts after a first burst, as nginx's
    /// `limit_rate_after`).
    case throttleAt(start: Int64, bytesPerSecond: Int, burst: Int64 = 0)
    /// Send `after` body bytes of every response whose body starts at byte `start`, then nothing for `seconds`,
    /// then the rest (the head goes at once): a server slow to answer one range, or one that stalls mid-body.
    case stallAt(start: Int64, after: Int64, seconds: Double)
    /// Send every byte of a response whose body starts off a multiple of `alignment` changed (XOR 0x5a): a cache
    /// that keeps whole blocks and spoils what it serves from the middle of one. A response that starts on a
    /// multiple is right.
    case corruptUnaligned(alignment: Int64)
    /// Send the bytes of `region` changed (XOR 0x5a) in the first `times` responses that carry any of them: a
    /// cache or proxy on the way that spoiled a block, then served it right.
    case corruptRegion(Range<Int64>, times: Int)
    /// Close a kept-alive connection instead of answering the next request on it, `times` times: a server whose
    /// keep-alive timer fired as the request came (the client reused a connection the server had given up).
    case closeKeptAlive(times: Int)
}

extension RangeFault {
    /// The page a `captivePortal` fault serves.
    public static let portalPage = Array("<html><body>Sign in to HotelWiFi</body></html>\n".utf8)
}
