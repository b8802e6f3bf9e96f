import Foundation
import MeterwiseClient
import Policy
import Transfer

/// What the engine knows of one job beyond its stored record: the live transfer and its timing.
struct JobRuntime<Instant: InstantProtocol & Sendable>: Sendable {
    var record: JobRecord
    var download: Download?
    /// `run()` is in flight.
    var running = false
    /// A pause or cancel was requested and `run()` has not returned yet.
    var stopping = false
    /// The link the running transfer is bound to; nil when it follows the default route.
    var boundLink: String?
    /// The link the running transfer's connections were opened on: its bytes arrive there (their
    /// destination is that link's address) even after the primary moves.
    var link: String?
    var rate: Int64?
    var decision: Decision?
    /// The policy stopped the job's transfer (or kept it from resuming): resuming waits for stability.
    var pausedByPolicy = false
    /// When the current policy pause began, for the paused-time total.
    var pausedSince: Instant?
    var pausedTotal: Duration = .zero
    var lastWaitAnnounced: Bool = false
    /// The transfer is waiting to retry (the server unreachable): when, and why.
    var nextRetryAt: Date?
    var retryReason: String?
    /// `record.bytesFetched` when the current transfer run began: the run's own count (its progress
    /// events) adds to it, so `bytes_fetched` grows while a job runs and sums every run.
    var fetchedBeforeRun: Int64 = 0

    init(record: JobRecord) {
        self.record = record
    }

    /// A transfer runs and is not being stopped.
    var active: Bool { running && !stopping }
}
