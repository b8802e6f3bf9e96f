import Foundation

/// `tc` arguments that shape a link with a token bucket (tbf): this kernel has no netem, and tbf is all
/// the lab needs to make a link slow. Pure: the lab runs the commands.
public enum TrafficShaper {
    /// The bucket size for `rate`: about 20 ms of traffic, at least 32 KiB so a GSO super-packet fits.
    public static func burstBytes(rateBitsPerSecond rate: Int64) -> Int64 {
        max(32 * 1024, rate / 8 / 50)
    }

    /// `tc` arguments (without `tc` itself) that set `rate` on `interface`'s egress.
    public static func tbf(interface: String, rateBitsPerSecond rate: Int64) -> [String] {
        [
            "qdisc", "replace", "dev", interface, "root", "tbf", "rate", "\(rate)bit",
            "burst", "\(burstBytes(rateBitsPerSecond: rate))b", "latency", "100ms",
        ]
    }

    /// Parses a rate such as `3mbit`, `48Mbit`, `500kbit` or `2000000` (bit/s); nil when it is none.
    public static func parseRate(_ text: String) -> Int64? {
        let lower = text.lowercased().trimmingCharacters(in: .whitespaces)
        let units: [(String, Int64)] = [("gbit", 1_000_000_000), ("mbit", 1_000_000), ("kbit", 1_000), ("bit", 1)]
        for (suffix, factor) in units where lower.hasSuffix(suffix) {
            guard let value = Double(lower.dropLast(suffix.count)), value > 0 else { return nil }
            return Int64(value * Double(factor))
        }
        guard let value = Int64(lower), value > 0 else { return nil }
        return value
    }
}
