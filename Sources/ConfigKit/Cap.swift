/// The largest value a field of a configuration file takes, and how a user writes it (`24h`, `1PiB`), so
/// an error can say `resume_after must be at most 24h`.
public struct Cap<Value: Comparable & Sendable>: Sendable {
    public var value: Value
    public var text: String

    public init(_ value: Value, _ text: String) {
        self.value = value
        self.text = text
    }
}

extension Cap where Value == Duration {
    /// Any duration: `Units.maxDuration` (100 years).
    public static var anyDuration: Cap { Cap(Units.maxDuration, "36500d (100 years)") }
}

extension Cap where Value == Int64 {
    /// Any size: `Units.maxBytes` (1 EiB).
    public static var anySize: Cap { Cap(Units.maxBytes, "1048576TiB (1 EiB)") }
}
