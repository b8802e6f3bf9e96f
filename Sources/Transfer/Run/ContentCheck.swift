import AsyncHTTPClient
import NIOCore

/// Some servers (CDNs, object-store gateways) send another ETag with every answer for the same bytes. An
/// ETag that disagrees with the one the download began with is then no proof that the object changed,
/// and throwing the partial away on it never converges. Before a disagreeing ETag throws anything away,
/// a few samples of the bytes already on disk are asked again, with no precondition, and compared byte
/// for byte: the same bytes mean the ETag is not a validator here, and the download goes on identified by
/// its length and Last-Modified (when the server keeps that), saying so; different bytes, or another
/// length, mean the object changed, and it restarts from 0 as before. A resumed download whose
/// checkpoint says so proves its bytes again the same way before it trusts them.
enum ContentCheck {
    /// How many bytes one sample holds at most.
    static let sampleBytes: Int64 = 64 * 1024

    /// What the check found.
    enum Verdict: Sendable, Equatable {
        /// The samples are the bytes on disk; `lastModified` is the date every answer carried (nil when they
        /// carried none or disagreed).
        case same(lastModified: String?)
        /// Another length, or other bytes.
        case changed
        /// No answer to compare (a failure, or a server that did not answer the ranges).
        case unknown
    }

    /// Up to three sample ranges inside `pieces` (the verified data on disk): the start of the first piece,
    /// the start of a middle one and the end of the last. Pure.
    static func samples(of pieces: [Checkpoint.Piece]) -> [Range<Int64>] {
        let sorted = pieces.filter { $0.length > 0 }.sorted { $0.offset < $1.offset }
        guard let first = sorted.first, let last = sorted.last else { return [] }
        let middle = sorted[sorted.count / 2]
        var out: [Range<Int64>] = []
        for range in [
            first.offset..<(first.offset + min(sampleBytes, first.length)),
            middle.offset..<(middle.offset + min(sampleBytes, middle.length)),
            (last.offset + max(0, last.length - sampleBytes))..<(last.offset + last.length),
        ] where !out.contains(range) {
            out.append(range)
        }
        return out
    }
}

extension DownloadRun {
    /// Asks the samples of what is on disk again and compares them (`ContentCheck`). `received` is told each
    /// answer's body and head bytes: they are fetched and not kept (`discarded_bytes`).
    func proveContent(
        total: Int64, writer: FileWriter, received: @Sendable (_ body: Int, _ head: Int) -> Void
    ) async -> ContentCheck.Verdict {
        let pieces = await writer.onQueue { $0.pieces() }
        let samples = ContentCheck.samples(of: pieces)
        guard !samples.isEmpty else { return .unknown }
        var dates: Set<String?> = []
        for range in samples {
            guard let answer = await sample(range, total: total, received: received) else { return .unknown }
            guard let body = answer.body else { return .changed }
            dates.insert(answer.lastModified)
            let local = await writer.onQueue { file -> [UInt8] in
                var bytes = [UInt8](repeating: 0, count: Int(range.count))
                let n = bytes.withUnsafeMutableBytes { FileIO.preadFully(fd: file.fd, $0, at: range.lowerBound) }
                return Array(bytes.prefix(max(0, n)))
            }
            if local != body { return .changed }
        }
        return .same(lastModified: dates.count == 1 ? dates.first! : nil)
    }

    /// One sample: the bytes of `range` as the server sends them now, with its Last-Modified; a nil body when
    /// the answer shows another object (another length); nil when no comparable answer came.
    func sample(_ range: Range<Int64>, total: Int64, received: @Sendable (_ body: Int, _ head: Int) -> Void) async
        -> (body: [UInt8]?, lastModified: String?)?
    {
        var url = request.url
        for redirects in 1...11 {
            let (client, proxy, forwarded) = route(for: url)
            var http = HTTPClientRequest.download(url, forwarded: forwarded, proxy: proxy)
            http.headers.add(name: "Range", value: "bytes=\(range.lowerBound)-\(range.upperBound - 1)")
            http.localAddress = download.localAddress
            do {
                let response = try await client.execute(
                    http, timeout: .seconds(Int64(request.noProgressTimeout.secondsDouble)))
                let head = ResponseHead(response)
                received(0, Self.headBytes(response))
                if [301, 302, 303, 307, 308].contains(head.status), let location = head.location {
                    guard
                        case .success(let next) = RedirectPolicy.follow(from: url, location: location, count: redirects)
                    else { return nil }
                    url = next
                    continue
                }
                guard head.status == 206, head.contentEncoding == nil, let text = head.contentRange,
                    let answered = ContentRange(header: text)
                else { return nil }
                if answered.total != total { return (nil, head.lastModified) }
                guard answered.first == range.lowerBound, answered.last == range.upperBound - 1 else { return nil }
                var body: [UInt8] = []
                for try await buffer in response.body {
                    received(buffer.readableBytes, 0)
                    body += buffer.readableBytesView
                    if body.count > range.count { return nil }
                }
                return (body, head.lastModified)
            } catch {
                return nil
            }
        }
        return nil
    }

    /// A response whose ETag disagrees with the download's (a 206 with another ETag and the same length, or a
    /// 412 to If-Match): true when the content check proved the bytes the same, after which the board no
    /// longer uses the ETag; false when the object changed or no check could be made (then `reason` stands).
    /// One segment checks at a time; the others wait for its answer.
    func etagProvedUnstable(
        _ reason: RestartReason, head: ResponseHead, known: KnownObject?, board: DownloadBoard, writer: FileWriter
    ) async -> Bool {
        guard reason == .objectChanged || reason == .preconditionFailed, let known, known.validators.etag != nil,
            let total = known.total
        else { return false }
        if head.status == 206 {
            guard let text = head.contentRange, ContentRange(header: text)?.total == total else { return false }
        }
        // The data to compare: another segment may not have written its first bytes yet.
        for _ in 0..<40 {
            if await writer.onQueue({ !$0.pieces().isEmpty }) { break }
            try? await Task.sleep(for: .milliseconds(50))
            if Task.isCancelled { return false }
        }
        while !board.beginCheck() {
            try? await Task.sleep(for: .milliseconds(20))
            if Task.isCancelled { return false }
        }
        var changed = false
        defer { board.endCheck(changed: changed) }
        // Another segment's check may have settled it meanwhile.
        if board.unstableETag { return true }
        if board.contentChanged { return false }
        let old = known.validators.etag ?? "-"
        let verdict = await proveContent(total: total, writer: writer) { body, head in
            if body > 0 { board.received(body) }
            if head > 0 { board.addHead(bytes: head) }
        }
        switch verdict {
        case .same(let lastModified) where known.validators.lastModified.map({ $0 == lastModified }) ?? true:
            board.distrustETag(lastModified: lastModified)
            let kept = board.known?.validators.lastModified.map { "its length and Last-Modified (\($0))" }
            // A 412 often carries no ETag of its own: say what was refused, not "none".
            let then = head.etag.map { "\(old), then \($0)" } ?? "\(old) refused with HTTP \(head.status) to If-Match"
            download.sink.yield(
                .warning(
                    "The server's ETag changes for the same bytes (\(then)): samples of the \(total)-byte object matched what is on disk, so the ETag is not used; the download goes on identified by \(kept ?? "its length and samples of its content")."
                ))
            logger.notice("unstable ETag", metadata: ["first": "\(old)", "now": "\(head.etag ?? "-")"])
            return true
        case .changed, .same:
            // Other bytes, another length, or a Last-Modified that moved: the object changed.
            changed = true
            return false
        case .unknown:
            return false
        }
    }
}
