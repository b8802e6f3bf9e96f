import Foundation
import Links
import MeterwiseClient
import Policy
import Transfer

extension Engine {
    /// Adds a job for `asker` and decides it at once. Fails when the destination is taken, or when its
    /// directory is not writable by the asker (checked with the asker's rights, not the daemon's).
    public func add(_ spec: JobSpec, id: String? = nil, by asker: Asker = .process) throws(EngineError) -> JobRecord {
        var spec = spec
        if let problem = DownloadURL.problem(spec.url) { throw EngineError(.invalidRequest, problem) }
        // The HEAD URL is requested by the daemon too: the same check, or it could reach other schemes.
        if let head = spec.headURL, let problem = DownloadURL.problem(head) {
            throw EngineError(.invalidRequest, "head_url: " + problem)
        }
        if let problem = spec.problem { throw EngineError(.invalidRequest, problem) }
        if let refusal = configuration.quota.refusal(asker: asker, unfinished: index.unfinished(of: asker.uid)) {
            throw EngineError(.quota, refusal)
        }
        if let sha256 = spec.sha256 {
            guard let parsed = ExpectedSHA256.parse(sha256) else {
                throw EngineError(.invalidRequest, ExpectedSHA256.hint)
            }
            spec.sha256 = parsed
        }
        guard spec.destination.hasPrefix("/") else {
            throw EngineError(.invalidRequest, "the destination must be an absolute path: \(spec.destination)")
        }
        // One destination, one spelling: `/d/./x`, `/d//x`, `/d/e/../x` and `/link-to-d/x` are `/d/x`, as the
        // kernel resolves them with the asker's rights (no lexical shortcut past a directory they cannot search).
        do throws(TransferError) {
            spec.destination = try DestinationCheck.resolve(
                spec.destination, identity: asker.identity, replacing: spec.isDelta)
            // A symlink may lead there although the path as given did not.
            if let area = JobSpec.kernelArea(spec.destination) {
                throw TransferError(
                    .invalidURL, "the destination resolves into \(area): save it in a folder of your own")
            }
        } catch {
            switch error.code {
            case .permission: throw EngineError(.forbidden, error.message)
            case .destinationExists: throw EngineError(.conflict, error.message)
            default: throw EngineError(.invalidRequest, error.message)
            }
        }
        try checkDestinationFree(spec.destination, for: asker)
        let id = id ?? Self.newID()
        var record = JobRecord(
            id: id, url: spec.url, destination: spec.destination, headURL: spec.headURL,
            expectedSHA256: spec.sha256, size: spec.size, priority: spec.priority, tags: spec.tags,
            allowMetered: spec.allowMetered, allowRoaming: spec.allowRoaming, segments: spec.segments,
            checkpointPath: DownloadRequest(url: spec.url, destination: spec.destination).checkpointPath,
            ownerUID: asker.uid, ownerGID: asker.gid, maxSize: spec.maxSize, now: now)
        record.caFile = spec.caFile
        record.certFile = spec.certFile
        record.keyFile = spec.keyFile
        record.proxy = spec.proxy
        record.mode = spec.mode
        if spec.isDelta {
            record.zsync = spec.zsyncURL ?? ""
            record.seeds = spec.seeds ?? []
        }
        if let mirrors = spec.mirrors, !mirrors.isEmpty { record.mirrors = mirrors }
        record.metalink = spec.metalink
        if spec.http2 == true { record.http2 = true }
        // The TLS files and the proxy are checked now, so a mistake is said to whoever adds the job; they are
        // read again (with the owner's rights) each time the transfer starts.
        do {
            _ = try connection(for: record)
        } catch {
            throw EngineError(.invalidRequest, error.message)
        }
        let sequence = try store.insert(record)
        index.insert(JobIndex.Row(record, sequence: sequence))
        events.publish(.added(job: id))
        let decision = reconcile(id)
        if let live = jobs[id] { return live.record }
        // Finished already (it could not start): as the store has it.
        if index.entry(id) == nil { return view(id)?.record ?? record }
        // Queued: the record as added, with where the first decision left it.
        if let entry = index.entry(id) { record.state = entry.state }
        if let decision {
            record.rule = decision.rule
            record.reason =
                index.entry(id)?.lifecycle.waitingForSlot == true
                ? Self.slotReason(configuration.maxActive) : decision.reasons.joined(separator: "; ")
        }
        return record
    }

    /// Fails when an unfinished job (other than `except`) downloads to `destination`: one destination, one job.
    func checkDestinationFree(_ destination: String, for asker: Asker, except: String? = nil) throws(EngineError) {
        guard let other = try store.unfinishedJob(at: destination), other.id != except else { return }
        let whose = asker.owns(ownerUID: other.ownerUID) ? "job \(other.id)" : "another user's job"
        throw EngineError(.conflict, "\(whose) already downloads to \(destination): choose another -o")
    }

    /// Deletes a cancelled job's partial file and checkpoint, with its owner's rights.
    static func removePartialFiles(of record: JobRecord) {
        Download.removePartial(of: record.destination, identity: record.owner.identity)
    }

    /// The job, if `asker` may see it: another user's job is "not found", as if it did not exist.
    func runtime(_ id: String, for asker: Asker = .process) throws(EngineError) -> JobRuntime<C.Instant> {
        guard let runtime = view(id), asker.owns(runtime.record) else {
            throw EngineError(.notFound, "no job \(id): `meterwise list` shows the jobs")
        }
        return runtime
    }

    /// Whether `asker` may see the job (for the event stream).
    public func isVisible(_ id: String, to asker: Asker) -> Bool {
        if let runtime = jobs[id] { return asker.owns(runtime.record) }
        if let entry = index.entry(id) { return asker.owns(ownerUID: entry.owner) }
        // Finished: its last events may still be on their way.
        return (try? store.job(id)).flatMap { $0 }.map { asker.owns($0) } ?? false
    }

    static func newID() -> String {
        let alphabet = Array("abcdefghijkmnpqrstuvwxyz23456789")
        return String((0..<8).map { _ in alphabet.randomElement()! })
    }

    public func status(_ id: String, for asker: Asker = .process) throws(EngineError) -> JobStatus {
        let runtime = try runtime(id, for: asker)
        return status(of: runtime)
    }

    func status(of runtime: JobRuntime<C.Instant>) -> JobStatus {
        var paused = runtime.pausedTotal
        if let since = runtime.pausedSince { paused += since.duration(to: clock.now) }
        let active = isTransferring(runtime.record.id)
        let link = active ? runtime.link : nil
        // A finished job has no policy action any more, nor a policy reason.
        let final = runtime.record.state.isFinal
        var record = runtime.record
        if final { record.reason = nil }
        // The user holds a paused job, not a rule: the last decision's rule and reason no longer apply.
        let heldByUser = record.state == .paused
        if heldByUser {
            record.rule = nil
            record.reason = "paused by the user; `meterwise resume \(record.id)` gives it back to the policy"
        }
        // A user:password in a URL is never shown back, not even to the job's owner.
        record.url = RedactedURL.withoutCredentials(record.url)
        record.headURL = record.headURL.map(RedactedURL.withoutCredentials)
        // A proxy is shown as `via_proxy` is: the user kept, the password `<redacted>`.
        record.proxy = record.proxy.map(RedactedURL.withoutPassword)
        var status = JobStatus(
            job: record, pausedSeconds: paused.seconds, link: link,
            action: final || heldByUser ? nil : runtime.decision?.action.rawValue,
            nextRetryAt: active ? runtime.nextRetryAt : nil,
            retryReason: active ? runtime.retryReason : nil,
            proxy: proxy(for: runtime.record)?.description)
        status.heldBy = final || heldByUser ? nil : runtime.decision?.heldBy
        status.mode = final ? nil : runtime.mode.rawValue
        if active { status.background = runtime.background.map(BackgroundFigures.init) }
        return status
    }

    /// Every job `asker` may see, in the order they were added.
    public func list(for asker: Asker = .process) -> [JobStatus] {
        let records: [JobRecord]
        do {
            records = try store.jobs()
        } catch {
            logger.error("\(error)")
            return []
        }
        var reasons = reasonCache()
        let paused = (try? store.pausedSeconds()) ?? [:]
        return records.filter { asker.owns($0) }.map {
            status(of: view(of: $0, pausedSeconds: paused[$0.id] ?? 0, reasons: &reasons))
        }
    }

    /// What the policy says now, with the live links and budgets, of a download like `job` (`check`,
    /// `GET /v1/decision`): nothing is queued.
    public func decide(_ job: JobInfo) -> Explanation {
        policy.explain(
            job: job, snapshot: snapshot, usage: accounting.usage, now: now, timeZone: configuration.timeZone)
    }

    /// Counts bytes another program moved for a download like `job` (`meterwise run`, `POST /v1/usage`)
    /// against the budget the policy gives it now, no more than the primary link really received that
    /// nothing counted yet (`LinkAccounting.recordExternal`); jobs are decided again when a budget was
    /// involved. Returns the bytes counted and the answer for `job` after counting them.
    public func recordUsage(bytes: Int64, for job: JobInfo) -> (counted: Int64, answer: Explanation) {
        let budgetKey = decide(job).decision.budgetKey
        let counted = accounting.recordExternal(
            bytes: bytes, budgetKey: budgetKey, counter: configuration.receivedBytes, at: now)
        if budgetKey != nil && counted > 0 { reconcileAll() }
        return (counted, decide(job))
    }

    /// A program asked whether it may download (`GET /v1/decision`, a question on the event stream): the
    /// primary's received bytes are read now, so the usage it reports next is measured from here.
    public func noteQuestion() {
        accounting.look(counter: configuration.receivedBytes, at: now)
    }

    /// Whether the policy counts the primary uplink metered; nil without one.
    public func primaryIsMetered() -> Bool? {
        policy.context(snapshot: snapshot, usage: accounting.usage, now: now, timeZone: configuration.timeZone)
            .primaryClass?.metered
    }

    /// One line for systemd's `STATUS=`: "2 running, 3 waiting: metered wwan0".
    public func statusLine() -> String {
        let running = jobs.keys.count(where: isTransferring)
        let waiting = index.waitingCount
        var line = "\(running) running, \(waiting) waiting"
        let context = policy.context(
            snapshot: snapshot, usage: accounting.usage, now: now, timeZone: configuration.timeZone)
        if let primary = context.primary, let network = context.primaryClass {
            line += ": \(network.metered ? "metered" : "unmetered") \(primary.name)"
        } else if haveSnapshot {
            line += ": no uplink"
        }
        return line
    }

    /// The policy's explanation of a job's decision right now.
    public func explain(_ id: String, for asker: Asker = .process) throws(EngineError) -> Explanation {
        let runtime = try runtime(id, for: asker)
        return policy.explain(
            job: runtime.record.jobInfo, snapshot: snapshot, usage: accounting.usage, now: now,
            timeZone: configuration.timeZone)
    }

    /// The user's pause: the job stays paused until `resume`. Returns once its transfer (if one ran) has
    /// stopped with its checkpoint written.
    public func pause(_ id: String, for asker: Asker = .process) async throws(EngineError) {
        _ = try runtime(id, for: asker)
        try await userRequest(id, .userPause, stopReason: "paused by the user")
    }

    /// Lifts the user's pause (or a failure); the policy decides from here.
    public func resume(_ id: String, for asker: Asker = .process) async throws(EngineError) {
        let runtime = try runtime(id, for: asker)
        guard runtime.record.state == .paused || runtime.record.state == .failed else {
            throw EngineError(.conflict, "job \(id) is \(runtime.record.state.rawValue), not paused")
        }
        // A failed job gave its destination up: another job may have taken it since.
        try checkDestinationFree(runtime.record.destination, for: asker, except: id)
        if runtime.record.state == .failed {
            if let refusal = configuration.quota.refusal(asker: asker, unfinished: index.unfinished(of: asker.uid)) {
                throw EngineError(.quota, refusal)
            }
            // Back in its place among the jobs added before and after it.
            guard let sequence = try store.sequence(of: id) else { return }
            index.insert(JobIndex.Row(runtime.record, sequence: sequence))
        }
        try await userRequest(id, .userResume, stopReason: "") { $0.error = nil }
        reconcile(id)
    }

    /// Stops the job and deletes its partial file and checkpoint; returns once its transfer has ended.
    public func cancel(_ id: String, for asker: Asker = .process) async throws(EngineError) {
        _ = try runtime(id, for: asker)
        try await userRequest(id, .userCancel, stopReason: "cancelled by the user")
    }
}

extension BackgroundFigures {
    /// The wire form of a transfer's background figures.
    init(_ b: BackgroundState) {
        self.init(
            window: b.window, connections: b.connections, baseDelay: b.baseDelay, queuingDelay: b.queuingDelay,
            target: b.target, phase: b.phase)
    }
}
