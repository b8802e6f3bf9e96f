import AsyncHTTPClient
import Logging
import NIOCore
import NIOHTTP1

/// The segments of one attempt, run as child tasks of one task group.
extension DownloadRun {
    /// What a child task of the attempt reports when it ends.
    enum WorkerEvent: Sendable {
        case done
        case restart(RestartReason)
        case failed(TransferError)
        case learned(Int)
        case stop(Download.StopReason)
        /// A pause has read what the kernels held: close the connections.
        case drained
        case ended
    }

    /// How one request ended for its segment.
    enum FetchOutcome: Sendable {
        case rangeDone
        case complete
        case retry(after: Duration?, reason: String, progressed: Bool)
        /// A portal or proxy answered: nothing written; wait (daemon) or end (`get`).
        case intercepted(Interception)
        /// The URL is reached over a link the job may not use now (`judgeSource`): nothing asked, or the body
        /// left at a link change; wait for another, not counted as a failure.
        case refused(reason: String)
        case end(WorkerEvent)
    }

    func attempt(board: DownloadBoard, writer: FileWriter, totals: Totals) async -> AttemptEnd {
        let stopSignal = download.makeStopSignal()
        let (learned, learnedContinuation) = AsyncStream.makeStream(of: Int.self)
        board.setLearned(learnedContinuation)
        let sink = download.sink
        let readAtStart = tap?.read.load(ordering: .relaxed) ?? 0
        var unreadAtClose: (unread: Int64, read: Int64)?
        defer {
            // The one place an attempt's counts are added (docs/get.md, "Counts"): body bytes received —
            // what the connections read past the response heads, and what the kernels held unread at the
            // close — and of those, what was not written.
            let kept = board.kept
            var received = board.counters.fetched
            if let tap {
                let read = unreadAtClose?.read ?? tap.read.load(ordering: .relaxed)
                received = max(received, read - readAtStart - kept.heads) + max(0, unreadAtClose?.unread ?? 0)
            }
            let thrown = max(0, received - kept.written)
            totals.fetched.withLock { $0 += received }
            totals.discarded.withLock { $0 += thrown }
        }
        return await withTaskGroup(of: WorkerEvent.self) { group in
            group.addTask {
                for await reason in stopSignal { return .stop(reason) }
                return .ended
            }
            group.addTask {
                for await parts in learned { return .learned(parts) }
                return .ended
            }
            group.addTask {
                await ticker(board: board, totals: totals)
                return .ended
            }
            if let tap {
                // Background mode: before the governor's first turn, no more requests than a starting window
                // holds floors (a download of 16 segments would otherwise send all 16 at once).
                download.gate.setAllowed(download.isBackground ? BackgroundWindow.startingConnections : nil)
                group.addTask {
                    await governor(tap, board: board)
                    return .ended
                }
            }
            var workers = 0
            if let total = board.plan.total {
                let n = max(
                    1, min(board.parts(total: total), Int(board.plan.remainingBytes / board.plan.grain) + 1)
                )
                board.split(into: n)
                let c = board.counters
                sink.yield(.started(totalBytes: total, resumedBytes: c.done, segments: n))
                for id in 0..<n {
                    group.addTask { await worker(id, board: board, writer: writer) }
                }
                workers = n
            } else {
                group.addTask { await worker(0, board: board, writer: writer) }
                workers = 1
            }
            var end: AttemptEnd?
            while let event = await group.next() {
                switch event {
                case .done:
                    workers -= 1
                    // Done when every byte is in: segments still waiting for something to take are not waited on.
                    if workers == 0 || board.plan.isComplete, end == nil {
                        end = .complete
                        group.cancelAll()
                    }
                case .learned(let n):
                    let c = board.counters
                    sink.yield(.started(totalBytes: c.total, resumedBytes: 0, segments: n))
                    if end == nil, n > 1 {
                        for id in 1..<n {
                            group.addTask { await worker(id, board: board, writer: writer) }
                        }
                        workers += n - 1
                    }
                case .stop(let reason):
                    if end == nil { end = .stopped(reason) }
                    if reason == .pause, let tap, !board.isDraining {
                        // Keep what the kernels already hold (`PauseDrain`): clamp the windows, read up to
                        // what they had received at this moment, then close.
                        tap.freezeWindows()
                        board.beginDrain()
                        let drain = PauseDrain(
                            started: .now, target: tap.read.load(ordering: .relaxed) + (await tap.unreadBytes()))
                        group.addTask {
                            while !drain.isOver(
                                now: .now, read: tap.read.load(ordering: .relaxed), lastReceive: board.lastReceive)
                            {
                                try? await Task.sleep(for: PauseDrain.poll)
                                if Task.isCancelled { break }
                            }
                            return .drained
                        }
                    } else {
                        if let tap { unreadAtClose = (await tap.unreadBytes(), tap.read.load(ordering: .relaxed)) }
                        group.cancelAll()
                    }
                case .drained:
                    // What the kernels hold unread now is thrown away with the connections: count it first.
                    if let tap { unreadAtClose = (await tap.unreadBytes(), tap.read.load(ordering: .relaxed)) }
                    group.cancelAll()
                case .restart(let reason):
                    if end == nil { end = .restart(reason) }
                    group.cancelAll()
                case .failed(let error):
                    if end == nil { end = .failed(error) }
                    group.cancelAll()
                case .ended:
                    break
                }
            }
            return end ?? .stopped(.pause)
        }
    }

    /// Each connection's window to what its rate needs, every `WindowGovernor.period`, so a pause finds
    /// little in flight. Often: between two turns the kernel's receive autotuning may raise a clamp as it
    /// grows the buffer.
    func governor(_ tap: ConnectionTap, board: DownloadBoard) async {
        while !board.isDraining {
            do {
                try await Task.sleep(for: WindowGovernor.period)
            } catch {
                return
            }
            if !board.isDraining {
                let allowed = await tap.governWindows(
                    background: download.isBackground, target: download.request.backgroundTarget)
                if allowed != download.gate.allowed { download.gate.setAllowed(allowed) }
            }
        }
    }

    /// Progress every 100 ms.
    func ticker(board: DownloadBoard, totals: Totals) async {
        let clock = ContinuousClock()
        var lastTime = clock.now
        let base = totals.fetched.withLock { $0 }
        var lastFetched: Int64 = 0
        var rate = 0.0
        while true {
            do {
                try await Task.sleep(for: .milliseconds(100))
            } catch {
                return
            }
            let c = board.counters
            let now = clock.now
            let dt = (now - lastTime).secondsDouble
            if dt > 0 {
                let instant = Double(c.fetched - lastFetched) / dt
                rate = rate == 0 ? instant : rate * 0.7 + instant * 0.3
            }
            lastTime = now
            lastFetched = c.fetched
            var progress = DownloadProgress(
                bytesDone: c.done, totalBytes: c.total, bytesFetched: base + c.fetched, bytesPerSecond: rate,
                activeSegments: c.active)
            progress.backgroundMode = download.isBackground
            progress.background = progress.backgroundMode ? tap?.backgroundState : nil
            download.sink.yield(.progress(progress))
        }
    }

    /// One segment: takes ranges from the plan (stealing when none are pending) and fetches them,
    /// retrying with backoff from where it stopped.
    func worker(_ id: Int, board: DownloadBoard, writer: FileWriter) async -> WorkerEvent {
        var attempt = 0
        var refusals = 0
        var span = RequestSpan()
        while true {
            if board.isDraining { return .done }
            guard board.assign(id) != nil else {
                // Nothing to take now; a request of another segment may yet prove too slow to wait for.
                guard board.mayTakeLater(id) else { return .done }
                do {
                    try await Task.sleep(for: RequestSpan.judged / 2)
                } catch {
                    return .ended
                }
                continue
            }
            // Background mode may share its window among fewer segments: this one waits its turn. A spent
            // allowance (a budget) starts no request: its first buffer would count past it.
            span.background = download.isBackground
            do {
                if let allowance = request.allowance, !allowance() { try await holdReads(until: allowance) }
                guard try await download.gate.enter(unless: { board.isDraining }) else { return .done }
            } catch {
                return .ended
            }
            let outcome = await fetch(id, board: board, writer: writer, span: &span)
            download.gate.leave()
            switch outcome {
            case .rangeDone:
                attempt = 0
                refusals = 0
            case .complete:
                return .done
            case .end(let event):
                return event
            case .refused(let reason):
                if Task.isCancelled || board.isDraining { return .ended }
                refusals += 1
                let delay = Duration.seconds(min(60, 5 * refusals))
                download.sink.yield(.retrying(attempt: refusals, delay: delay, reason: reason))
                do {
                    try await download.wake.sleep(for: delay)
                } catch {
                    return .ended
                }
            case .intercepted(let interception):
                // Not the server: a wait for the daemon (the engine wakes it at any link change), the end for
                // `get`. Either way the partial stays as it is.
                guard request.waitOutInterception else {
                    let partial = board.counters.done > 0
                    return .failed(
                        TransferError(.intercepted, interception.message(partial: partial), cause: interception))
                }
                if Task.isCancelled || board.isDraining { return .ended }
                attempt += 1
                let delay = download.retry.delay(attempt: attempt, retryAfter: nil, jitter: Double.random(in: 0..<1))
                board.noteFailure(interception.reason)
                download.sink.yield(
                    .retrying(attempt: attempt, delay: delay ?? .seconds(30), reason: interception.reason))
                do {
                    try await download.wake.sleep(for: delay ?? .seconds(30))
                } catch {
                    return .ended
                }
            case .retry(let after, let reason, let progressed):
                if Task.isCancelled || board.isDraining { return .ended }
                if progressed { attempt = 0 }
                attempt += 1
                let c = board.counters
                if c.done > 0, board.known?.validators.isEmpty ?? true, !board.unstableETag, !request.resumeUnvalidated
                {
                    board.noteFailure(reason)
                    return .restart(.unvalidated)
                }
                guard
                    let delay = download.retry.delay(
                        attempt: attempt, retryAfter: after, jitter: Double.random(in: 0..<1))
                else {
                    return .failed(
                        TransferError(
                            .retriesExhausted,
                            GiveUpText.retriesExhausted(retries: attempt - 1, reason: reason, bytesDone: c.done)
                        )
                    )
                }
                logger.debug("retrying", metadata: ["segment": "\(id)", "reason": "\(reason)", "delay": "\(delay)"])
                download.sink.yield(.retrying(attempt: attempt, delay: delay, reason: reason))
                do {
                    try await download.wake.sleep(for: delay)
                } catch {
                    return .ended
                }
            }
        }
    }

    /// One request for a span of `id`'s current range (`RequestSpan`), following redirects, then its body
    /// into the writer; `span` takes the request's figures for sizing the next.
    func fetch(_ id: Int, board: DownloadBoard, writer: FileWriter, span: inout RequestSpan) async -> FetchOutcome {
        let (ask, asked, hasLocalData, hasAllData) = board.ask(for: id, span: span)
        var known = asked
        var url = request.url
        board.setInFlight(id, true)
        defer {
            board.setInFlight(id, false)
            board.endRequest(id)
        }
        // This request's redirects (at most `RedirectPolicy`'s): one that starts where an earlier request's led
        // (`DownloadBoard.redirected`) counts from there. Any answer but the object on that way (a signed link
        // expired: an error, a page, a redirect to one) sends the request back to the download's own URL once.
        var redirects = 0
        var place = board.redirected
        if let place { url = place }
        var judgedAt: UInt64 = 0
        var judging = true
        // A new download's first request listens for the mirrors a server announces (`Announced`).
        let listens =
            followsAnnouncements && request.followMetalink && request.mirrors == nil && !hasLocalData && ask.start == 0
        var announced = Announced()
        while true {
            if judging {
                // Each request's URL may be reached over a link the job may use (`judgeSource`: redirects as they
                // come, the first here); a link change while the body comes asks again (`consume`).
                judging = false
                judgedAt = download.wake.wakes
                if let judge = request.judgeSource, case .refuse(let why) = await judge(url) {
                    return .refused(reason: Download.refusal(url, why))
                }
            }
            let (client, proxy, forwarded) = route(for: url)
            var http = HTTPClientRequest.download(url, forwarded: forwarded, proxy: proxy)
            if let range = ask.rangeHeader {
                http.headers.add(name: "Range", value: range)
                if let known, hasLocalData || ask.start > 0 || id > 0 {
                    for (name, value) in known.validators.preconditionHeaders {
                        http.headers.add(name: name, value: value)
                    }
                }
            }
            http.localAddress = download.localAddress
            let sent = ContinuousClock.now
            let response: HTTPClientResponse
            do {
                response = try await client.execute(
                    http, timeout: .seconds(Int64(request.noProgressTimeout.secondsDouble)))
            } catch {
                if Task.isCancelled { return .end(.ended) }
                if let place { board.forgetRedirect(to: place) }
                if let error = error as? HTTPClientError, error == .getConnectionFromPoolTimeout {
                    // Waiting for a free connection is not the server failing: it never counts as a retry.
                    return .retry(after: nil, reason: "waiting for a free connection", progressed: true)
                }
                if let failure = TLSFailure.classify(error) {
                    if let portal = request.interceptedLink?() {
                        // Behind a portal a certificate failure is the portal answering for the server: a wait.
                        return .retry(
                            after: nil, reason: "the server's certificate was refused while \(portal)",
                            progressed: false)
                    }
                    if request.waitOutInterception, board.counters.done > 0,
                        failure == .serverCertificate || failure == .hostName
                    {
                        // This job's bytes came under a certificate that was accepted: one refused now is far
                        // more likely a portal or proxy answering for the server (a hotel's session that ended
                        // before NetworkManager's next check) than the server's own. A wait, not the end.
                        return .retry(
                            after: nil,
                            reason:
                                "the server's certificate \(failure == .hostName ? "names another host" : "did not verify"), though this job's bytes came under an accepted one: a captive portal or proxy may be answering for the server (tried again until it verifies; if the server's own certificate changed, cancel the job or add it again with the right --cacert)",
                            progressed: false)
                    }
                }
                if let permanent = await permanentFailure(error, url: url) { return .end(.failed(permanent)) }
                let via = proxy.map { " through the proxy \($0)" } ?? ""
                return .retry(
                    after: nil, reason: "the request\(via) failed: \(FailureText.describe(error))", progressed: false)
            }
            let head = ResponseHead(response)
            board.addHead(bytes: Self.headBytes(response))
            if listens { announced.read(response.headers, from: url) }
            let path = AnswerPath(
                requested: request.url, answered: url, redirects: redirects + (place == nil ? 0 : 1),
                source: known?.source)
            var decision = ResponseClassifier.classify(
                head, ask: ask, known: known, hasLocalData: hasLocalData, hasAllData: hasAllData, path: path
            )
            if case .intercepted(let found) = decision, head.status == 412, found.signs == [.refusalFromElsewhere],
                await servesAnObject(at: url, known: known, board: board)
            {
                // Where the URL leads now is an object of its own: another version, not a portal's page.
                decision = .restart(.preconditionFailed)
            }
            if case .restart(let reason) = decision,
                await etagProvedUnstable(reason, head: head, known: known, board: board, writer: writer)
            {
                // The ETag is not a validator here: ask again without it (a 412), or take the answer as it is.
                known = board.known
                if head.status == 412 { continue }
                decision = ResponseClassifier.classify(
                    head, ask: ask, known: known, hasLocalData: hasLocalData, hasAllData: hasAllData, path: path)
            }
            logger.debug(
                "response",
                metadata: [
                    "segment": "\(id)", "status": "\(head.status)", "range": "\(ask.rangeHeader ?? "-")",
                    "url": "\(RedactedURL.redact(url))",
                ]
            )
            if let started = place {
                switch decision {
                case .redirect, .body, .complete: break
                default:
                    // Not the object on the way from where the download's URL led before: ask its own URL again.
                    board.forgetRedirect(to: started)
                    (place, url, redirects, judging, announced) = (nil, request.url, 0, true, Announced())
                    continue
                }
            }
            switch decision {
            case .redirect(let location):
                redirects += 1
                switch RedirectPolicy.follow(from: url, location: location, count: redirects) {
                case .success(let next):
                    // Where it leads must be reachable over a link the job may use (`judgeSource`); if not, the
                    // request is tried again later (a link change wakes it).
                    judgedAt = download.wake.wakes
                    if let judge = request.judgeSource, case .refuse(let why) = await judge(next) {
                        return .retry(
                            after: nil, reason: "the redirect to \(RedactedURL.redact(next)) is not followed: \(why)",
                            progressed: false)
                    }
                    url = next
                    continue
                case .failure(let error):
                    // Redirects in a loop (or to http://) on the way from where an earlier request's led: the
                    // download's own URL may lead elsewhere now.
                    if let started = place {
                        board.forgetRedirect(to: started)
                        (place, url, redirects, judging, announced) = (nil, request.url, 0, true, Announced())
                        continue
                    }
                    return .end(.failed(error))
                }
            case .body(let offset, let length, let total, let validators):
                // A mirror system's answer (MirrorBrain, MirrorCache): a Metalink file describing the object. The
                // download becomes one from its sources (docs/mirrors.md); nothing of it is written.
                if request.followMetalink, request.mirrors == nil, !hasLocalData, offset == 0,
                    MetalinkAnswer.isMetalink(contentType: head.contentType)
                {
                    return .end(
                        .failed(
                            TransferError(
                                .metalink, "The server answered with a Metalink file.", cause: MetalinkAnswer(url: url))
                        ))
                }
                // A server that names other places of the file (RFC 6249 `Link: rel=duplicate`, a mirror system's
                // redirector): the download becomes one from all of them (docs/mirrors.md); nothing is written.
                // RFC 6249: mirrors count only with the file's digest (`Digest`, `Repr-Digest`), which then checks
                // them all; without one, a stale mirror of the same length would go unnoticed.
                // A sha-256 that contradicts `--sha256` names another file than the one asked for: its mirrors are
                // not used, and the URL's bytes alone are checked against `--sha256` at the end.
                let contradicts = announced.contradicts(expectedSHA256: request.expectedSHA256)
                var mirrors =
                    listens && offset == 0 && !announced.digests.isEmpty
                    ? announced.mirrors(beside: request.url, answered: url) : []
                if !mirrors.isEmpty, let said = contradicts {
                    download.sink.yield(
                        .warning(
                            "\(RedactedURL.redact(request.url)) gives the file's sha-256 as \(said), not the expected \(request.expectedSHA256?.lowercased() ?? ""): not using the \(mirrors.count) other source(s) it names."
                        ))
                    mirrors = []
                }
                if !mirrors.isEmpty || (listens && offset == 0 && board.sourcesLeftPartWay && contradicts == nil) {
                    return .end(
                        .failed(
                            TransferError(
                                .metalink, "The server named other sources of the file.",
                                cause: MirrorsAnswer(mirrors: mirrors, digests: announced.digests))
                        ))
                }
                if let total, board.takeAdmission() {
                    if let failure = admissionProblem(total: total, have: board.counters.done) {
                        return .end(.failed(failure))
                    }
                    if let admit = request.admitTotal, await !admit(total) { return .end(.stop(.pause)) }
                }
                if redirects > 0 { board.noteRedirected(to: url) }
                board.accept(
                    total: total, validators: validators, ranged: head.status == 206, segment: id,
                    contentType: head.contentType.map { String($0.prefix(200)) }, source: AnswerPath.place(url))
                // A 206 ends where its Content-Range says: where the ask did, or sooner when the server caps the
                // size of a range (the next request goes on from there); a 200 carries the whole object.
                let asked =
                    head.status == 206 ? length.map { offset + $0 } ?? RangePlan.unknownEnd : RangePlan.unknownEnd
                let timing = RequestTiming(sent: sent, head: .now - sent)
                let outcome = await consume(
                    response.body, of: url, from: offset, until: asked, id: id, board: board, writer: writer,
                    timing: timing, judgedAt: judgedAt, span: &span)
                // A body that failed there (a node that breaks): the next try asks the download's own URL.
                if case .retry = outcome { board.forgetRedirect(to: url) }
                return outcome
            case .restart(let reason):
                return .end(.restart(reason))
            case .intercepted(let interception):
                logger.notice(
                    "intercepted",
                    metadata: ["segment": "\(id)", "status": "\(head.status)", "reason": "\(interception.reason)"])
                return .intercepted(interception)
            case .complete:
                return .complete
            case .retry(let after, let reason):
                if forwarded != nil, let proxy, let answer = proxyOwnAnswer(response) {
                    // squid's own 502/503/504: it could not reach the server.
                    let said = "the proxy \(proxy) answered \(answer.shown) (it could not reach the server)"
                    return .retry(after: after, reason: said, progressed: false)
                }
                return .retry(after: after, reason: reason, progressed: false)
            case .fail(let error):
                if head.status == 400, let refusal = await clientCertificateRefusal(response.body, url: url) {
                    return .end(.failed(refusal))
                }
                if forwarded != nil, let proxy {
                    // A forwarded request's 4xx may be the proxy's own answer: 407 always is; others are when
                    // the proxy marks them (`proxyOwnAnswer`), or are said as coming through it.
                    if head.status == 407 { return .end(.failed(proxyCredentialsWanted)) }
                    if let answer = proxyOwnAnswer(response) {
                        return .end(
                            .failed(
                                TransferError(.proxy, ProxyAnswerText.refusedRequest(answer, proxy: proxy, url: url))))
                    }
                    // Some proxies (tinyproxy) refuse wrong credentials with 401, not 407.
                    let credentials =
                        head.status == 401 && proxy.username != nil
                        ? " It may be the proxy's refusal of the user name and password in its URL: check them." : ""
                    return .end(
                        .failed(
                            TransferError(
                                error.code,
                                error.message + " (The answer came through the proxy \(proxy).)" + credentials)))
                }
                return .end(.failed(error))
            }
        }
    }

    /// Nil when an object of `total` bytes may be downloaded here; otherwise why not: over the maximum
    /// size, or more than the free space (with how much is missing).
    func admissionProblem(total: Int64, have: Int64) -> TransferError? {
        Self.admissionProblem(request, total: total, have: have)
    }

    /// Why an object of `total` bytes cannot be taken when `have` of them are on disk: over the size limit, or
    /// more than the free space.
    static func admissionProblem(_ request: DownloadRequest, total: Int64, have: Int64) -> TransferError? {
        let limit = request.maxSize ?? ObjectLimits.maxBytes
        if total > limit {
            return TransferError(
                .tooLarge,
                "The object is \(total) bytes, over the maximum size of \(limit) bytes; raise --max-size if it is right."
            )
        }
        let directory = FileIO.directory(of: request.destination)
        if let free = FileIO.freeBytes(directory), total - have > free {
            return TransferError(
                .tooLarge,
                "The object needs \(total - have) more bytes but \(directory) has \(free) free; free \(total - have - free) bytes or choose another -o, then run again."
            )
        }
        return nil
    }

    /// When a request was sent and how long its head took.
    struct RequestTiming {
        var sent: ContinuousClock.Instant
        var head: Duration
    }

    /// Streams a body to the writer at the Content-Range offset, up to the end of what was asked (`asked`,
    /// exclusive) or the segment's end, whichever is first; a body that reaches it gives its figures to `span`.
    /// At a link change after `judgedAt` (`Download.wake`) `url` is judged again: refused, the body is left.
    func consume(
        _ body: HTTPClientResponse.Body, of url: String, from offset: Int64, until asked: Int64, id: Int,
        board: DownloadBoard, writer: FileWriter, timing: RequestTiming, judgedAt: UInt64, span: inout RequestSpan
    ) async -> FetchOutcome {
        var position = offset
        var judgedAt = judgedAt
        let onBytes = request.onBytes
        let allowance = request.allowance
        let limit = request.maxSize ?? ObjectLimits.maxBytes
        var speed = LowSpeedWindow(limit: request.lowSpeedLimit, window: request.lowSpeedTime, start: .now)
        var firstBytes: ContinuousClock.Instant?
        do {
            for try await buffer in body {
                let n = buffer.readableBytes
                if firstBytes == nil { firstBytes = .now }
                board.received(n)
                onBytes?(n)
                let end = min(board.end(of: id), asked)
                if position >= end { break }
                if end == RangePlan.unknownEnd, position + Int64(n) > limit {
                    return .end(
                        .failed(
                            TransferError(
                                .tooLarge,
                                "The server sent more than \(limit) bytes without saying the length; stopped. Raise --max-size if the object is that large."
                            )))
                }
                if !isThrottledBelowLowSpeed, let slow = speed.add(n, at: .now) {
                    return .retry(after: nil, reason: slow, progressed: false)
                }
                var slice = buffer
                if Int64(n) > end - position {
                    slice = buffer.getSlice(at: buffer.readerIndex, length: Int(end - position))!
                }
                // The limit is the network's: bytes already here when a pause begins are written, not
                // held back until the connection closes under them (get.md, SIGINT).
                if !board.isDraining { try await download.limiter.wait(for: n, unless: { board.isDraining }) }
                try await writer.write(slice, at: position)
                position += Int64(slice.readableBytes)
                board.advance(id, to: position, wrote: slice.readableBytes)
                // At the end of what was asked the body ends by itself: reading on to its end keeps the connection
                // for the next request. Only a segment whose end another one took breaks off (a pause or a stop).
                if position >= end, end < asked { break }
                if let allowance, !allowance() {
                    try await holdReads(until: allowance)
                    speed = LowSpeedWindow(limit: request.lowSpeedLimit, window: request.lowSpeedTime, start: .now)
                }
                // What the kernel already holds of it is drained by a pause, not left here.
                if let judge = request.judgeSource, download.wake.wakes != judgedAt, !board.isDraining {
                    judgedAt = download.wake.wakes
                    if case .refuse(let why) = await judge(url) { return .refused(reason: Download.refusal(url, why)) }
                }
            }
        } catch let error as TransferError {
            return .end(.failed(error))
        } catch {
            if Task.isCancelled { return .end(.ended) }
            return .retry(
                after: nil, reason: "the connection failed at byte \(position) (\(FailureText.describe(error)))",
                progressed: position > offset)
        }
        if Task.isCancelled { return .end(.ended) }
        let end = min(board.end(of: id), asked)
        if position >= end {
            // A server may send the head at once and the body later: the wait for the body is the request's
            // round trip, and what follows its rate.
            let body = firstBytes ?? timing.sent
            span.record(bytes: position - offset, elapsed: .now - body, head: max(timing.head, body - timing.sent))
            return .rangeDone
        }
        if end == RangePlan.unknownEnd {
            board.learnEnd(at: position)
            return .rangeDone
        }
        return .retry(after: nil, reason: "the body ended early at byte \(position)", progressed: position > offset)
    }
}

extension DownloadRun {
    /// How a request for `url` goes (`SourceClients.route`): with no per-URL clients, by the download's client
    /// and its proxy, http:// URLs through an HTTP proxy as forwarded requests on the forwarding client.
    func route(for url: String) -> (client: HTTPClient, proxy: ProxyServer?, forwarded: ForwardedRequest?) {
        if let sources { return sources.route(for: url) }
        let proxy = self.proxy
        guard let forwarder, let proxy, proxy.kind == .http, let forwarded = ForwardedRequest.make(url, through: proxy)
        else { return (client, proxy, nil) }
        return (forwarder, proxy, forwarded)
    }

    /// The proxy's own answer to a forwarded request, told from the server's by the header a proxy adds to
    /// the errors it makes itself (squid's `X-Squid-Error`, RFC 9209's `Proxy-Status`); nil for the server's.
    func proxyOwnAnswer(_ response: HTTPClientResponse) -> ProxyAnswer? {
        guard let detail = response.headers.first(name: "X-Squid-Error") ?? response.headers.first(name: "Proxy-Status")
        else { return nil }
        return ProxyAnswer(
            status: Int(response.status.code), reason: response.status.reasonPhrase,
            detail: String(detail.prefix(120)))
    }

    /// Reads nothing more until `allowance` says so again: at `Download.retryNow()` (the engine calls it when
    /// a job's budget or route changes) and once a second; throws `CancellationError` when stopped.
    func holdReads(until allowance: @Sendable () -> Bool) async throws {
        while !allowance() {
            try await download.wake.sleep(for: .seconds(1))
        }
    }

    /// The size of a response head as it came over the wire, near enough: status line, header lines and
    /// the blank line (the reason phrase is NIO's for the code).
    static func headBytes(_ response: HTTPClientResponse) -> Int {
        var n = "HTTP/1.1 000 ".utf8.count + response.status.reasonPhrase.utf8.count + 4
        for (name, value) in response.headers { n += name.utf8.count + 2 + value.utf8.count + 2 }
        return n
    }

    /// A rate limit so low that the low-speed check would fire on it: the check is off then.
    var isThrottledBelowLowSpeed: Bool {
        guard let rate = download.rateLimit else { return false }
        return rate < request.lowSpeedLimit * 4 * Int64(max(1, request.segments ?? 4))
    }
}

/// The low-speed limit of one response: bytes received per window; pure.
struct LowSpeedWindow {
    let limit: Int64
    let window: Duration
    var start: ContinuousClock.Instant
    var bytes: Int64 = 0

    init(limit: Int64, window: Duration, start: ContinuousClock.Instant) {
        self.limit = limit
        self.window = window
        self.start = start
    }

    /// Counts `n` bytes received at `now`; returns why the response is too slow when a full window passed
    /// below the limit, and starts a new window otherwise.
    mutating func add(_ n: Int, at now: ContinuousClock.Instant) -> String? {
        guard limit > 0, window > .zero else { return nil }
        bytes += Int64(n)
        let elapsed = now - start
        guard elapsed >= window else { return nil }
        let seconds = elapsed.secondsDouble
        if Double(bytes) < Double(limit) * seconds {
            return "the server sent \(bytes) bytes in \(Int(seconds)) s, below the low-speed limit of \(limit) bytes/s"
        }
        start = now
        bytes = 0
        return nil
    }
}

extension ResponseHead {
    init(_ response: HTTPClientResponse) {
        let h = response.headers
        self.init(
            status: Int(response.status.code),
            etag: h.first(name: "ETag"),
            lastModified: h.first(name: "Last-Modified"),
            contentRange: h.first(name: "Content-Range"),
            contentLength: h.first(name: "Content-Length").flatMap { Int64($0) }.flatMap { $0 >= 0 ? $0 : nil },
            retryAfter: h.first(name: "Retry-After"),
            location: h.first(name: "Location"),
            contentEncoding: h.first(name: "Content-Encoding"),
            contentType: h.first(name: "Content-Type")
        )
    }
}
