import AsyncHTTPClient
import Foundation
import Links
import Logging
import MeterwiseClient
import Policy
import Transfer

/// Carrying decisions out: starting, re-routing and stopping transfers, their events and outcomes, and
/// saving what changed.
extension Engine {
    /// Starts (or resumes) the job's transfer; false when it could not (the job failed, with the reason).
    @discardableResult
    func start(_ id: String, link: String, localAddress: String?, rate: Int64?, budgetKey: String?) -> Bool {
        guard var runtime = jobs[id] else { return false }
        let download: Download
        if let existing = runtime.download {
            download = existing
        } else {
            let settings: (tls: TLSSettings, proxy: ProxySettings)
            do {
                settings = try connection(for: runtime.record)
            } catch {
                // A CA or key file the owner removed or can no longer read: the job fails with what to fix;
                // `resume` tries again.
                if let slot = index.slot(of: id) { apply(slot, .startFailed) }
                jobs[id]?.record.error = error.message
                persist(id)
                events.publish(.failed(job: id, error.message))
                retire(id)
                return false
            }
            download = makeDownload(for: runtime.record, tls: settings.tls, proxy: settings.proxy)
            runtime.download = download
            consumeEvents(id, download)
        }
        download.setRateLimit(rate)
        download.setBackground(runtime.mode == .background)
        download.setLocalAddress(localAddress)
        let bound = localAddress != nil || link != snapshot.primary?.name
        runtime.boundLink = bound ? link : nil
        runtime.link = link
        runtime.rate = rate
        runtime.fetchedBeforeRun = runtime.record.bytesFetched
        runtime.discardedBeforeRun = runtime.record.discardedBytes ?? 0
        if let since = runtime.pausedSince {
            runtime.pausedTotal += since.duration(to: clock.now)
            runtime.pausedSince = nil
        }
        runtime.record.error = nil
        jobs[id] = runtime
        route(id, link: runtime.link, budgetKey: budgetKey)
        persist(id)
        events.publish(.started(job: id, link: link, bound: localAddress != nil, resumedFrom: runtime.record.bytesDone))
        commandSink.yield(.drive(id, download))
        return true
    }

    /// Points the job's bytes at its link and budget, with the budget's allowance.
    func route(_ id: String, link: String?, budgetKey: String?) {
        let limit = budgetKey.flatMap { key -> Int64? in
            let name = key.split(separator: "@").dropLast().joined(separator: "@")
            return policy.rules.lazy.compactMap(\.budget).first { $0.name == name }?.bytes
        }
        accounting.route(job: id, link: link, budgetKey: budgetKey, budgetLimit: limit)
        // Reads held at a spent budget look again now: the new route may allow them.
        if accounting.allows(job: id) { jobs[id]?.download?.retryNow() }
    }

    func makeDownload(for record: JobRecord, tls: TLSSettings = .system, proxy: ProxySettings = .direct) -> Download {
        let accounting = self.accounting
        let id = record.id
        let sink = commandSink
        var request = DownloadRequest(
            url: record.url, destination: record.destination, headURL: record.headURL, segments: record.segments,
            expectedSHA256: record.expectedSHA256,
            // An outage is a wait, not a failure: only a permanent answer (404, a changed pinned object, a
            // wrong sha256) fails a daemon job. A link change ends the back-off at once (`apply`).
            maxRetries: Int.max, maxSize: record.maxSize, identity: record.owner.identity,
            onBytes: { count in
                // A budget just ran out: decide again now, not at the next progress event.
                if accounting.record(job: id, bytes: count) { sink.yield(.reconcile(id)) }
            })
        // Past the budget the transfer reads nothing more while the decision catches up.
        request.allowance = { accounting.allows(job: id) }
        // The real size decides, before the body is read: a declared size was only a hint.
        request.admitTotal = { [weak self] total in await self?.admit(id, total: total) ?? false }
        if let zsync = record.zsync {
            // A delta job: the seeds are read with the owner's rights; once they are scanned, what is left to
            // fetch is the size the policy and the budgets see.
            request.delta = DeltaSource(control: zsync.isEmpty ? nil : zsync, seeds: record.seeds ?? [])
            request.admitDelta = { [weak self] toFetch, total in
                await self?.admitDelta(id, toFetch: toFetch, total: total) ?? false
            }
        }
        if record.mirrors != nil || record.metalink != nil {
            // Several sources (docs/mirrors.md); a local Metalink file is read with the owner's rights.
            request.mirrors = MirrorSet(
                sources: ([record.url] + (record.mirrors ?? [])).filter { $0 != record.metalink }.map {
                    MirrorSet.Source(url: $0)
                },
                metalinkURL: record.metalink)
        }
        request.tls = tls
        request.proxy = proxy
        request.http2 = record.http2 == true
        // Every URL is judged by the link that reaches it (a proxy's, when it goes through one) and the rule's
        // `prefer:` (`SourceJudge`, docs/mirrors.md).
        let names = SourceAddresses.Cache()
        request.judgeSource = { [weak self] url in
            guard let self, case .success(let authority) = URLAuthority.parse(url) else { return .use }
            // The host as the HTTP client reads it: percent-escapes decoded.
            guard let host = authority.host.removingPercentEncoding, !host.isEmpty else {
                return .refuse("its host \(authority.host) cannot be read")
            }
            // Through a proxy, the link (and `prefer: lan`) is the proxy's; host globs match the source's host.
            let through = proxy.server(for: url)
            let addresses = await names.resolve(through?.host ?? host)
            let use = await self.judgeSource(id, host: host, addresses: addresses)
            if let through, case .refuse(let why) = use { return .refuse("its proxy \(through.host): " + why) }
            return use
        }
        // A captive portal's page is a wait, tried again with back-off and at once at any link change.
        request.waitOutInterception = true
        let intercepted = self.intercepted
        request.interceptedLink = { intercepted.current }
        configuration.tuneRequest(&request)
        // Jobs × segments stay within the client's connections per host, so no request waits for one.
        let perJob = max(1, TransferClient.perHostConnections / max(1, configuration.maxActive))
        if let segments = request.segments {
            request.segments = min(segments, perJob)
        } else if perJob < 4 {
            request.segments = perJob
        }
        var jobLogger = logger
        jobLogger[metadataKey: "job"] = "\(id)"
        return Download(request: request, client: configuration.httpClient, logger: jobLogger)
    }

    /// What job `id` does with a source at `host` (`SourceJudge`), by its decision and links now.
    func judgeSource(_ id: String, host: String, addresses: [String]) -> SourceUse {
        guard let runtime = jobs[id], let decision = runtime.decision else { return .use }
        // A simulation does not bind: the link the transfer runs over stands for the bound one.
        let bound = runtime.boundLink ?? (configuration.canBind ? nil : runtime.link)
        // The kernel is asked for packets from the address the transfer is bound to (rules by source route them).
        let localAddress = runtime.download?.localAddress
        // Uplinks as the decision allows them; a link without a default route (a LAN) as the rule's `via` says.
        let uplinks = Set(snapshot.uplinks.map(\.name))
        let lans = snapshot.links.filter { !uplinks.contains($0.name) && policy.admits($0, under: decision) }
        return SourceJudge(
            snapshot: snapshot, allowed: Set(decision.allowedLinks + lans.map(\.name)), rule: decision.rule,
            prefer: decision.prefer, boundLink: bound,
            kernelRoute: { [monitor] in monitor.outgoingRoute(to: $0, from: localAddress) }
        ).use(host: host, addresses: addresses)
    }

    /// The server said the object's real length: record it and decide again before the body is read.
    /// False when the decision stops the transfer (a big file on a metered link that a small declared
    /// size let start).
    func admit(_ id: String, total: Int64) -> Bool {
        guard let runtime = jobs[id], isTransferring(id) else { return false }
        guard runtime.record.totalBytes != total else { return true }
        jobs[id]?.record.totalBytes = total
        reconcile(id)
        return isTransferring(id)
    }

    /// A delta job's seeds are scanned: `toFetch` of the file's `total` bytes are left to fetch. Recorded, and
    /// decided again with that size (a delta under a "small files may use cellular" rule goes on).
    func admitDelta(_ id: String, toFetch: Int64, total: Int64) -> Bool {
        guard jobs[id] != nil, isTransferring(id) else { return false }
        jobs[id]?.record.totalBytes = total
        guard jobs[id]?.record.deltaBytes != toFetch else { return true }
        jobs[id]?.record.deltaBytes = toFetch
        persist(id)
        reconcile(id)
        return isTransferring(id)
    }

    func consumeEvents(_ id: String, _ download: Download) {
        commandSink.yield(.forward(id, download))
    }

    nonisolated func drive(_ id: String, _ download: Download) async {
        let result: Result<DownloadOutcome, TransferError>
        do {
            result = .success(try await download.run())
        } catch {
            result = .failure(error)
        }
        await runEnded(id, result)
    }

    nonisolated func forwardEvents(_ id: String, _ download: Download) async {
        for await event in download.events {
            await handle(event, job: id, from: download)
        }
    }

    func handle(_ event: DownloadEvent, job id: String, from download: Download) {
        guard jobs[id]?.download === download else { return }
        switch event {
        case let .started(total, resumed, _):
            jobs[id]?.record.totalBytes = total
            jobs[id]?.record.bytesDone = resumed
        case let .progress(progress):
            if progress.activeSegments > 0 {
                jobs[id]?.nextRetryAt = nil
                jobs[id]?.retryReason = nil
            }
            jobs[id]?.record.bytesDone = progress.bytesDone
            jobs[id]?.record.totalBytes = progress.totalBytes
            jobs[id]?.background = progress.background
            totals.add(jobs[id]?.count(fetched: progress.bytesFetched, discarded: progress.discardedBytes))
            events.publish(.progress(job: id, progress))
            // A budget can run out mid-transfer: decide again while bytes count against one.
            if jobs[id]?.decision?.budgetKey != nil { reconcile(id) }
        case let .checkpointed(bytesDone):
            jobs[id]?.record.bytesDone = bytesDone
            // Progress was saved: the daemon's deaths before this are not this job's doing.
            jobs[id]?.record.interruptions = 0
            persist(id)
            saveAccounting()
        case let .restarted(reason):
            events.publish(.notice(job: id, "restarted from 0: \(reason)"))
        case let .retrying(attempt, delay, reason):
            // The downloader sleeps in real time, whatever the engine's clock: the wall clock says when.
            jobs[id]?.nextRetryAt = Date().addingTimeInterval(delay.seconds)
            jobs[id]?.retryReason = reason
            events.publish(.notice(job: id, "retry \(attempt) in \(delay): \(reason)"))
        case let .warning(text):
            events.publish(.notice(job: id, text))
        case let .paused(progress):
            // The run's last count (run() returns the outcome and runEnded counts it too: whichever is first).
            totals.add(jobs[id]?.count(fetched: progress.bytesFetched, discarded: progress.discardedBytes))
        case .completed, .cancelled, .failed:
            break  // run() returns these; runEnded handles them
        case let .delta(stage):
            if case let .scanned(seed, blocks, of, seconds) = stage {
                events.publish(
                    .notice(
                        job: id,
                        "scanned \(seed) in \(String(format: "%.1f", seconds)) s: \(blocks) of \(of) blocks found"))
            }
        case let .sources(list, _):
            jobs[id]?.record.sources = list.map {
                SourceFigures(url: $0.url, bytes: $0.bytes, dropped: $0.dropped, standby: $0.standby, proxy: $0.proxy)
            }
        }
    }

    func runEnded(_ id: String, _ result: Result<DownloadOutcome, TransferError>) {
        guard var runtime = jobs[id], let slot = index.slot(of: id), index[slot].lifecycle.phase.hasTransfer else {
            return
        }
        runtime.nextRetryAt = nil
        runtime.retryReason = nil
        if case .success = result { runtime.record.interruptions = 0 }
        runtime.boundLink = nil
        runtime.link = nil
        accounting.stopRouting(job: id)
        let end: TransferEnd
        switch result {
        case let .success(.completed(download)):
            end = .completed
            runtime.record.sha256 = download.sha256
            runtime.record.bytesDone = download.totalBytes
            runtime.record.totalBytes = download.totalBytes
            totals.add(runtime.count(fetched: download.bytesFetched, discarded: download.discardedBytes))
            runtime.record.refetchedBytes = LinkAccounting.sum(runtime.record.refetchedBytes, download.refetchedBytes)
            totals.refetched = LinkAccounting.sum(totals.refetched, download.refetchedBytes)
            runtime.record.reason = nil
            if let since = runtime.pausedSince {
                runtime.pausedTotal += since.duration(to: clock.now)
                runtime.pausedSince = nil
            }
        case .success(.paused):
            end = .paused
            if let progress = runtime.download?.pausedProgress {
                totals.add(runtime.count(fetched: progress.bytesFetched, discarded: progress.discardedBytes))
            }
        case .success(.cancelled):
            end = .cancelled
        case let .failure(error):
            end = .failed
            runtime.record.error = error.description
        }
        jobs[id] = runtime
        transferEnded(id, slot: slot, end)
        switch (result, index[slot].lifecycle.phase) {
        case let (.success(.completed(download)), .completed):
            events.publish(.completed(job: id, download))
        case let (.failure(error), .failed):
            events.publish(.failed(job: id, error.description))
        default:
            break
        }
        let finished = index[slot].lifecycle.phase.isFinal
        if finished { jobs[id]?.download = nil }
        persist(id)
        saveAccounting()
        if finished { retire(id) }
        if configuration.stopWhenIdle { checkIdle() }
        if finished { pruneFinished() }
        reconcileAll()
    }

    func checkIdle() {
        // Nothing runs once every job is final, so stopping needs no pause.
        if index.isEmpty && jobs.isEmpty && !stopped && ((try? store.count()) ?? 0) > 0 {
            stopped = true
            saveAccounting()
            commandSink.yield(.stop)
        }
    }

    func persist(_ id: String) {
        jobs[id]?.record.updatedAt = now
        guard let runtime = jobs[id] else { return }
        var paused = runtime.pausedTotal
        if let since = runtime.pausedSince { paused += since.duration(to: clock.now) }
        do {
            try store.update(runtime.record, pausedSeconds: paused.seconds)
        } catch {
            logger.error("\(error)", metadata: ["job": "\(id)"])
        }
    }

    func saveAccounting() {
        let (usage, links) = accounting.takeForSaving()
        do {
            try store.saveAccounting(usage: usage, linkBytes: links)
        } catch {
            logger.error("\(error)")
        }
    }
}
