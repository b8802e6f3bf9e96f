/// The byte counts of every job's transfers since the daemon started, for `/metrics`: the sums of what
/// the jobs' own counts grew by (`bytes_fetched`, `discarded_bytes`, `refetched_bytes`, defined once in
/// docs/get.md, "Counts"), saturating so a counter never traps.
public struct TransferTotals: Sendable, Equatable {
    public var fetched: Int64 = 0
    public var discarded: Int64 = 0
    public var refetched: Int64 = 0

    public init() {}

    /// Adds a job's growth (`JobRuntime.count`); nil (no such job) adds nothing.
    mutating func add(_ growth: (fetched: Int64, discarded: Int64)?) {
        guard let growth else { return }
        fetched = LinkAccounting.sum(fetched, growth.fetched)
        discarded = LinkAccounting.sum(discarded, growth.discarded)
    }
}
