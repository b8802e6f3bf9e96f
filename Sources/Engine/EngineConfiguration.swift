import AsyncHTTPClient
import Foundation
import Transfer

/// How an engine runs. The defaults suit the daemon; the demo and tests change a few.
public struct EngineConfiguration: Sendable {
    /// At most this many transfers run at once; the rest wait their turn by priority, then age.
    public var maxActive: Int
    /// Whether connections may be bound to a link's source address (real links). Off in simulation.
    public var canBind: Bool
    /// End `run()` once every job is completed, failed or cancelled (the demo).
    public var stopWhenIdle: Bool
    /// The time zone of the policy's time windows.
    public var timeZone: TimeZone
    /// The HTTP client for every transfer; nil lets the downloader use its shared client.
    public var httpClient: HTTPClient?
    /// Adjusts each job's download request (checkpoint cadence, segments, timeouts) before it starts.
    public var tuneRequest: @Sendable (inout DownloadRequest) -> Void
    /// Finished jobs (completed, failed, cancelled) are deleted this long after they last changed; nil
    /// keeps them. Checked at start and whenever a job finishes, at most once a minute.
    public var retention: Duration? = .seconds(7 * 86_400)
    /// The proxies of jobs that name none (the daemon's environment: https_proxy, http_proxy, no_proxy...).
    public var proxy: ProxySettings = .direct
    /// CAs trusted for every job besides the system's store (`daemon --ca-file`); a job's `ca_file`
    /// replaces both.
    public var caBundle: CABundle = .none
    /// The kernel's count that bounds what other programs may report as used (`POST /v1/usage`): each
    /// real link's own; the whole machine's for simulated links.
    public var receivedBytes: ReceivedBytesCounter = .perLink
    /// How many unfinished jobs each user (not root, not the daemon's own user) may hold.
    public var quota = JobQuota()

    public init(
        maxActive: Int = 3, canBind: Bool = true, stopWhenIdle: Bool = false, timeZone: TimeZone = .current,
        httpClient: HTTPClient? = nil, tuneRequest: @escaping @Sendable (inout DownloadRequest) -> Void = { _ in }
    ) {
        self.maxActive = maxActive
        self.canBind = canBind
        self.stopWhenIdle = stopWhenIdle
        self.timeZone = timeZone
        self.httpClient = httpClient
        self.tuneRequest = tuneRequest
    }
}
