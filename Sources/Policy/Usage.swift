/// The budget ledger: bytes moved per budget per period. A pure value the engine persists (Codable).
///
/// Keys come from `Decision.budgetKey` and name the budget and the start of its current period, so a new
/// period starts from zero without any reset step; `prune(keeping:)` drops periods that ended.
public struct Usage: Sendable, Codable, Hashable {
    /// Bytes per budget key (`name@periodStartUnixSeconds`).
    public var bytes: [String: Int64]

    public init(bytes: [String: Int64] = [:]) {
        self.bytes = bytes
    }

    /// Counts `bytes` against the budget the decision named; does nothing when it named none.
    public mutating func record(bytes count: Int64, decision: Decision) {
        guard let key = decision.budgetKey else { return }
        record(bytes: count, budgetKey: key)
    }

    /// Counts `bytes` against a budget key.
    public mutating func record(bytes count: Int64, budgetKey: String) {
        guard count > 0 else { return }
        let (sum, overflow) = bytes[budgetKey, default: 0].addingReportingOverflow(count)
        bytes[budgetKey] = overflow ? .max : sum
    }

    /// Bytes counted against a budget key.
    public func used(_ budgetKey: String) -> Int64 { bytes[budgetKey] ?? 0 }

    /// Keeps only the given keys (the current periods), dropping finished periods.
    public mutating func prune(keeping keys: Set<String>) {
        bytes = bytes.filter { keys.contains($0.key) }
    }
}
