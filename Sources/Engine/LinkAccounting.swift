import Foundation
import Links
import Policy
import Synchronization

/// Counts received bytes per link and per budget as they arrive, without a hop to the engine's actor:
/// the downloader's byte callback lands here directly. A transfer's bytes count for the link its
/// connections were opened on (they are addressed to that link's address, so the kernel receives them
/// there even after the primary moves); the engine sets it when the transfer starts, and the budget
/// the moment a decision changes it.
public final class LinkAccounting: Sendable {
    struct Route {
        /// The link the transfer's connections use; nil counts for the primary.
        var link: String?
        var budgetKey: String?
        /// The budget's allowance: crossing it must be noticed at once, not at the next progress event.
        var budgetLimit: Int64?
    }

    struct State {
        var primary: Link?
        var kinds: [String: LinkKind] = [:]
        var routes: [String: Route] = [:]
        var bytesByLink: [String: Int64] = [:]
        var usage = Usage()
        var unsaved: Int64 = 0
        var unclaimed = UnclaimedBytes()
        /// What the daemon's own transfers received per link since it started (not what reports claimed,
        /// which `bytesByLink` holds too): the part of a counter's gain reports may not claim.
        var transferBytes: [String: Int64] = [:]
        var readings: UInt64 = 0

        /// Where `counter` counts the primary's bytes: its pool's key and the daemon's own bytes there.
        func scope(_ counter: ReceivedBytesCounter) -> (key: String, own: Int64) {
            guard !counter.wholeMachine else {
                return ("*", transferBytes.values.reduce(Int64(0)) { LinkAccounting.sum($0, $1) })
            }
            let link = primary?.name ?? "unknown"
            return (link, transferBytes[link] ?? 0)
        }
    }

    private let state: Mutex<State>

    public init(usage: Usage = Usage(), linkBytes: [String: (kind: String, bytes: Int64)] = [:]) {
        var initial = State()
        initial.usage = usage
        for (link, entry) in linkBytes {
            initial.bytesByLink[link] = entry.bytes
            initial.kinds[link] = LinkKind(rawValue: entry.kind) ?? .other
        }
        state = Mutex(initial)
    }

    /// A new snapshot: its primary and the links' kinds.
    public func apply(_ snapshot: LinkSnapshot) {
        state.withLock { state in
            state.primary = snapshot.primary
            for link in snapshot.links { state.kinds[link.name] = link.kind }
        }
    }

    /// Sets where a job's bytes go from now on.
    public func route(job: String, link: String?, budgetKey: String?, budgetLimit: Int64? = nil) {
        state.withLock { $0.routes[job] = Route(link: link, budgetKey: budgetKey, budgetLimit: budgetLimit) }
    }

    /// False once the job's budget is used up: its transfer then reads no more until a decision moves it
    /// (`DownloadRequest.allowance`), so a budget is overshot by no more than the buffers in hand.
    public func allows(job: String) -> Bool {
        state.withLock { state in
            guard let route = state.routes[job], let key = route.budgetKey, let limit = route.budgetLimit else {
                return true
            }
            return state.usage.used(key) < limit
        }
    }

    public func stopRouting(job: String) {
        state.withLock { _ = $0.routes.removeValue(forKey: job) }
    }

    /// Counts `count` bytes received by `job`. Returns true when these bytes used up the job's budget.
    @discardableResult
    public func record(job: String, bytes count: Int) -> Bool {
        state.withLock { state in
            let route = state.routes[job]
            let link = route?.link ?? state.primary?.name ?? "unknown"
            state.bytesByLink[link] = Self.sum(state.bytesByLink[link] ?? 0, Int64(count))
            state.transferBytes[link] = Self.sum(state.transferBytes[link] ?? 0, Int64(count))
            state.unsaved = Self.sum(state.unsaved, Int64(count))
            guard let key = route?.budgetKey else { return false }
            let before = state.usage.used(key)
            state.usage.record(bytes: Int64(count), budgetKey: key)
            guard let limit = route?.budgetLimit else { return false }
            return before < limit && state.usage.used(key) >= limit
        }
    }

    /// Counts bytes another program says it moved (`meterwise run`, `POST /v1/usage`) on the primary link,
    /// against `budgetKey` when the policy counts that download against a budget. A report is taken on
    /// no one's word: it counts only as many bytes as the link received that no report claimed yet and
    /// the daemon's own transfers did not count (`UnclaimedBytes`). Returns the bytes counted.
    @discardableResult
    public func recordExternal(bytes count: Int64, budgetKey: String?, counter: ReceivedBytesCounter, at now: Date)
        -> Int64
    {
        // The counter is read outside the lock (sysfs I/O must not stall transfers' byte counting); readings
        // are numbered so one overtaken by a later reading is not applied after it.
        let (link, sequence) = state.withLock { state in
            state.readings += 1
            return (state.primary?.name, state.readings)
        }
        let reading = counter.wholeMachine ? counter.read("") : link.flatMap(counter.read)
        return state.withLock { state in
            let (key, own) = state.scope(counter)
            let claimed = state.unclaimed.claim(
                count, link: key, counter: reading, own: own, at: now, sequence: sequence)
            guard claimed > 0 else { return 0 }
            let name = state.primary?.name ?? "unknown"
            state.bytesByLink[name] = Self.sum(state.bytesByLink[name] ?? 0, claimed)
            state.unsaved = Self.sum(state.unsaved, claimed)
            if let budgetKey { state.usage.record(bytes: claimed, budgetKey: budgetKey) }
            return claimed
        }
    }

    /// Reads the primary's counter so the next report measures from now (any question to the daemon).
    public func look(counter: ReceivedBytesCounter, at now: Date) {
        recordExternal(bytes: 0, budgetKey: nil, counter: counter, at: now)
    }

    /// Saved counters saturate: a sum past Int64.max stays there instead of trapping.
    static func sum(_ a: Int64, _ b: Int64) -> Int64 {
        let (result, overflow) = a.addingReportingOverflow(b)
        return overflow ? (b < 0 ? .min : .max) : result
    }

    public var usage: Usage { state.withLock { $0.usage } }

    public var bytesByLink: [String: Int64] { state.withLock { $0.bytesByLink } }

    /// Bytes per link kind (`wlan`, `wwan`, ...).
    public var bytesByKind: [String: Int64] {
        state.withLock { state in
            var result: [String: Int64] = [:]
            for (link, bytes) in state.bytesByLink {
                let kind = (state.kinds[link] ?? .other).rawValue
                result[kind] = Self.sum(result[kind] ?? 0, bytes)
            }
            return result
        }
    }

    /// What the store should save, and resets the unsaved counter.
    func takeForSaving() -> (Usage, [String: (kind: String, bytes: Int64)]) {
        state.withLock { state in
            state.unsaved = 0
            var links: [String: (kind: String, bytes: Int64)] = [:]
            for (link, bytes) in state.bytesByLink {
                links[link] = ((state.kinds[link] ?? .other).rawValue, bytes)
            }
            return (state.usage, links)
        }
    }
}
