import Foundation
import MeterwiseClient
import Policy
import Transfer

/// What the engine knows of one job beyond its stored record and its lifecycle (which the index entry
/// keeps): the live transfer and its timing.
struct JobRuntime<Instant: InstantProtocol & Sendable>: Sendable {
    /// The job's record; its `state` is written only from the lifecycle (`Engine.transition`).
    var record: JobRecord
    var download: Download?
    /// The link the running transfer is bound to; nil when it follows the default route.
    var boundLink: String?
    /// The link the running transfer's connections were opened on: its bytes arrive there (their
    /// destination is that link's address) even after the primary moves.
    var link: String?
    var rate: Int64?
    var decision: Decision?
    /// Background mode's figures from the transfer's last progress event; nil in the foreground.
    var background: BackgroundState?
    /// When the current policy pause began, for the paused-time total.
    var pausedSince: Instant?
    var pausedTotal: Duration = .zero
    /// The transfer is waiting to retry (the server unreachable): when, and why.
    var nextRetryAt: Date?
    var retryReason: String?
    /// `record.bytesFetched` when the current transfer run began: the run's own count (its progress
    /// events) adds to it, so `bytes_fetched` grows while a job runs and sums every run.
    var fetchedBeforeRun: Int64 = 0
    /// `record.discardedBytes` when the current transfer run began, likewise.
    var discardedBeforeRun: Int64 = 0
    /// The stop being carried out: why, and when it was decided (for decision → stopped latency).
    var stop: (reason: String, decidedAt: ContinuousClock.Instant, wallClock: Date)?

    init(record: JobRecord) {
        self.record = record
    }

    /// How the job transfers: its own `mode`, else the policy's, else background (docs/background.md).
    var mode: TransferMode {
        record.mode.flatMap(TransferMode.init(rawValue:)) ?? decision?.mode ?? .background
    }

    /// The current run's counts so far, added to what the job's earlier runs counted (saturating: a
    /// counter that is saved must never trap).
    /// Returns how much each count grew, for the engine's totals (`TransferTotals`).
    @discardableResult
    mutating func count(fetched: Int64, discarded: Int64) -> (fetched: Int64, discarded: Int64) {
        let before = (record.bytesFetched, record.discardedBytes)
        record.bytesFetched = LinkAccounting.sum(fetchedBeforeRun, max(0, fetched))
        record.discardedBytes = LinkAccounting.sum(discardedBeforeRun, max(0, discarded))
        return (max(0, record.bytesFetched - before.0), max(0, (record.discardedBytes ?? 0) - (before.1 ?? 0)))
    }
}
