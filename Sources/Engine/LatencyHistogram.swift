import ConfigKit

/// Durations counted into Prometheus histogram buckets (cumulative on output), with their sum and count.
public struct LatencyHistogram: Sendable, Hashable {
    /// Upper bounds in seconds: a pause stops in milliseconds; a stuck one shows in the last buckets.
    public static let bounds: [Double] = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    /// Samples per bucket (not cumulative); the last one counts those above every bound.
    public private(set) var counts = [Int](repeating: 0, count: Self.bounds.count + 1)
    public private(set) var sum: Double = 0
    public private(set) var count = 0

    public init() {}

    public mutating func record(_ duration: Duration) {
        let seconds = max(0, duration.seconds)
        counts[Self.bounds.firstIndex { seconds <= $0 } ?? Self.bounds.count] += 1
        sum += seconds
        count += 1
    }

    /// Cumulative counts per upper bound, `+Inf` last, as the exposition format wants them.
    public var cumulative: [(bound: String, count: Int)] {
        var running = 0
        var result: [(String, Int)] = []
        for (index, bound) in Self.bounds.enumerated() {
            running += counts[index]
            result.append(("\(bound)", running))
        }
        result.append(("+Inf", count))
        return result
    }
}
