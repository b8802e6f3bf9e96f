import Foundation

/// Where the kernel's count of a link's received bytes is read: the bound on what `POST /v1/usage` may
/// claim (a report cannot count more than the link really carried).
public struct ReceivedBytesCounter: Sendable {
    /// The link's received bytes since it appeared; nil when the kernel has no count for it.
    public let read: @Sendable (_ link: String) -> Int64?
    /// True when one count covers every link (simulated links): the daemon's own bytes on all links are
    /// then what it counted itself.
    public let wholeMachine: Bool

    public init(wholeMachine: Bool, read: @escaping @Sendable (String) -> Int64?) {
        self.wholeMachine = wholeMachine
        self.read = read
    }

    /// Each link's own counter, `/sys/class/net/LINK/statistics/rx_bytes` (real links).
    public static let perLink = ReceivedBytesCounter(wholeMachine: false, read: { link in sysfsCounter(link) })

    /// Every interface of the machine together, loopback included: simulated links (a scenario) carry
    /// their bytes over whatever the machine really has, so only the whole machine's count bounds them.
    public static let wholeMachine = ReceivedBytesCounter(
        wholeMachine: true,
        read: { _ in
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/sys/class/net") else { return nil }
            var sum: Int64 = 0
            for name in names {
                guard let value = sysfsCounter(name) else { continue }
                sum = LinkAccounting.sum(sum, value)
            }
            return sum
        })

    /// One interface's `rx_bytes`; nil for a name that is not a plain interface name or has no counter.
    static func sysfsCounter(_ name: String) -> Int64? {
        guard !name.isEmpty, name.utf8.count <= 15, name != ".", name != "..", !name.contains("/") else { return nil }
        guard let data = FileManager.default.contents(atPath: "/sys/class/net/\(name)/statistics/rx_bytes"),
            let text = String(data: data.prefix(32), encoding: .ascii)
        else { return nil }
        guard let value = UInt64(text.trimmingCharacters(in: .whitespacesAndNewlines)) else { return nil }
        return value > UInt64(Int64.max) ? .max : Int64(value)
    }
}

/// The bytes a link received that no report has claimed yet: the most `POST /v1/usage` may count.
///
/// Pure. Each report first adds what the link's counter gained since the last look, less what the
/// daemon's own transfers counted on that link meanwhile (those are counted already), then takes what it
/// claims from that pool, oldest bytes first.
///
/// - The kernel counts a byte when it lands in a socket buffer, the daemon when it reads it: when the
///   daemon's count gains more than the counter did, it is catching up on bytes that already went into
///   the pool, and the excess is taken back out of it (newest first), or owed by the next gains. So over
///   any stretch of time, reports count at most what the link received less the daemon's own bytes, plus
///   what the daemon's connections held unread at one instant.
/// - Readings are applied in the order they were taken (`sequence`): a reading overtaken by a later one
///   only claims from the pool.
/// - Bytes unclaimed for `horizon` expire; what the counter gained over a gap longer than `horizon` is
///   taken as spread evenly over it, so only the last horizon's share joins the pool: no report collects
///   an hour of other programs' traffic at once. Any question to the daemon looks (`look`), and `run`
///   reports every 2 s, so its own bytes never fall in such a gap.
/// - A counter that went backwards (the interface was re-created) starts a new baseline.
struct UnclaimedBytes: Sendable {
    static let horizon: TimeInterval = 60

    private struct Look {
        var counter: Int64
        var own: Int64
        var at: Date
        var sequence: UInt64
    }
    private struct Pool {
        var chunks: [(at: Date, bytes: Int64)] = []
        /// Bytes the daemon counted beyond what the counter showed: the next gains pay this first.
        var owed: Int64 = 0
    }
    private var last: [String: Look] = [:]
    private var pools: [String: Pool] = [:]

    /// Adds what `link` received since the last look (`counter` now, read as reading number `sequence`;
    /// `own`: the daemon's own bytes on it, cumulative), then claims up to `requested` of the pool. Returns
    /// the bytes claimed.
    mutating func claim(
        _ requested: Int64, link: String, counter: Int64?, own: Int64, at now: Date, sequence: UInt64 = .max
    ) -> Int64 {
        var pool = pools[link] ?? Pool()
        pool.chunks.removeAll { now.timeIntervalSince($0.at) >= Self.horizon || $0.bytes <= 0 }
        if let counter, sequence >= last[link]?.sequence ?? 0 {
            if let previous = last[link], counter >= previous.counter, now >= previous.at {
                let gained = counter - previous.counter
                let ownGained = own >= previous.own ? own - previous.own : 0
                if gained >= ownGained {
                    var fresh = gained - ownGained
                    let paid = min(fresh, pool.owed)
                    pool.owed -= paid
                    fresh -= paid
                    let gap = now.timeIntervalSince(previous.at)
                    // Double(Int64.max) rounds up past Int64.max: the product is capped below it first.
                    let recent = gap <= Self.horizon ? fresh : Int64(min(Double(fresh) * (Self.horizon / gap), 9e18))
                    if recent > 0 { pool.chunks.append((now, recent)) }
                } else {
                    var excess = ownGained - gained
                    while excess > 0, let newest = pool.chunks.last {
                        let take = min(excess, newest.bytes)
                        pool.chunks[pool.chunks.count - 1].bytes -= take
                        excess -= take
                        if pool.chunks[pool.chunks.count - 1].bytes == 0 { pool.chunks.removeLast() }
                    }
                    pool.owed = LinkAccounting.sum(pool.owed, excess)
                }
            } else {
                pool.owed = 0  // a new baseline owes nothing
            }
            last[link] = Look(counter: counter, own: own, at: now, sequence: sequence)
        }
        var left = max(0, requested)
        var claimed: Int64 = 0
        for index in pool.chunks.indices where left > 0 {
            let take = min(left, pool.chunks[index].bytes)
            pool.chunks[index].bytes -= take
            left -= take
            claimed += take
        }
        pool.chunks.removeAll { $0.bytes <= 0 }
        pools[link] = pool
        return claimed
    }
}
