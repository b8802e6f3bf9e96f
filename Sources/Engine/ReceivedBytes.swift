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
                sum = sum.addingReportingOverflow(value).overflow ? .max : sum + value
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
/// claims from that pool, oldest bytes first. Bytes unclaimed for `horizon` expire; what the counter
/// gained over a gap longer than `horizon` is taken as spread evenly over it, so only the last horizon's
/// share joins the pool: no report collects an hour of other programs' traffic at once. Any question to the
/// daemon looks (`look`), and `run` reports every 2 s, so its own bytes never fall in such a gap. A counter
/// that went backwards (the interface was re-created) starts a new baseline.
struct UnclaimedBytes: Sendable {
    static let horizon: TimeInterval = 60

    private struct Look {
        var counter: Int64
        var own: Int64
        var at: Date
    }
    private var last: [String: Look] = [:]
    private var pools: [String: [(at: Date, bytes: Int64)]] = [:]

    /// Adds what `link` received since the last look (`counter` now; `own`: the daemon's own bytes
    /// on it, cumulative), then claims up to `requested` of the pool. Returns the bytes claimed.
    mutating func claim(_ requested: Int64, link: String, counter: Int64?, own: Int64, at now: Date) -> Int64 {
        var pool = (pools[link] ?? []).filter { now.timeIntervalSince($0.at) < Self.horizon && $0.bytes > 0 }
        if let counter {
            if let previous = last[link], counter >= previous.counter, now >= previous.at {
                let gained = counter - previous.counter
                let ownGained = own >= previous.own ? own - previous.own : 0
                if gained > ownGained {
                    let fresh = gained - ownGained
                    let gap = now.timeIntervalSince(previous.at)
                    // Double(Int64.max) rounds up past Int64.max: the product is capped below it first.
                    let recent = gap <= Self.horizon ? fresh : Int64(min(Double(fresh) * (Self.horizon / gap), 9e18))
                    pool.append((now, recent))
                }
            }
            last[link] = Look(counter: counter, own: own, at: now)
        }
        var left = max(0, requested)
        var claimed: Int64 = 0
        for index in pool.indices where left > 0 {
            let take = min(left, pool[index].bytes)
            pool[index].bytes -= take
            left -= take
            claimed += take
        }
        pools[link] = pool.filter { $0.bytes > 0 }
        return claimed
    }

    /// Starts the baseline of `link` (the first look claims nothing: what came before is unknown).
    mutating func look(link: String, counter: Int64?, own: Int64, at now: Date) {
        _ = claim(0, link: link, counter: counter, own: own, at: now)
    }
}
