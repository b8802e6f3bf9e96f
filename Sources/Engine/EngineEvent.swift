import Foundation
import Links
import Policy
import Transfer

/// Something the engine did or saw; the demo's timeline, `meterwise watch` and the API's event stream.
public enum EngineEvent: Sendable {
    /// The link snapshot changed.
    case links(LinkSnapshot)
    /// A job's decision changed (action, rule or allowed links).
    case decision(job: String, Decision)
    /// A transfer started or resumed over `link`.
    case started(job: String, link: String, bound: Bool, resumedFrom: Int64)
    /// A running transfer was stopped by the policy (`byUser` false) or the user: said once the transfer has
    /// ended with its checkpoint written, so no byte of the job is written after it.
    case paused(job: String, reason: String, byUser: Bool, timing: PauseTiming)
    /// Allowed again; resuming once the links have been stable long enough.
    case waiting(job: String, remaining: Duration)
    /// The rate limit of a running transfer changed.
    case throttled(job: String, rate: Int64?)
    case progress(job: String, DownloadProgress)
    /// A notice from the downloader (restart, retry, warning).
    case notice(job: String, String)
    case completed(job: String, DownloadResult)
    case failed(job: String, String)
    case cancelled(job: String)
    case added(job: String)
    /// The policy was reloaded from these files (a SIGHUP or a changed file).
    case policyReloaded(files: [String])
}

/// When a pause was decided, and how long the transfer took to stop after that.
public struct PauseTiming: Sendable, Hashable {
    /// The wall-clock time of the decision (or the user's request).
    public var decidedAt: Date
    /// Decision → transfer ended with its checkpoint written.
    public var stoppedAfter: Duration

    public init(decidedAt: Date, stoppedAfter: Duration) {
        self.decidedAt = decidedAt
        self.stoppedAfter = stoppedAfter
    }
}
