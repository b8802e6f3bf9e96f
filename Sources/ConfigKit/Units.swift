/// Parsing and printing of the units users write in policy and scenario files:
/// sizes (`5MiB`, `700MB`, `512`), durations (`200ms`, `5s`, `1h30m`) and rates (`512KiB/s`).
public enum Units {
    static let byteUnits: [(String, Int64)] = [
        ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40),
        ("KB", 1_000), ("MB", 1_000_000), ("GB", 1_000_000_000), ("TB", 1_000_000_000_000),
        ("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30), ("B", 1),
    ]

    /// The hint shown when a size does not parse.
    public static let bytesHint = "write a size as a number and a unit, e.g. 512KiB, 5MiB, 1.5GiB, 700MB or 4096B"
    /// The hint shown when a duration does not parse.
    public static let durationHint = "write a duration such as 200ms, 5s, 10m, 1h30m or 2d"
    /// The hint shown when a rate does not parse.
    public static let rateHint = "write a rate as a size per second, e.g. 512KiB/s or 2MiB/s"

    /// Parses a byte size: a plain integer is bytes; units are binary (KiB, MiB, GiB, TiB, or K/M/G) or
    /// decimal (KB, MB, GB, TB). Fractions are allowed with a unit (`1.5GiB`).
    public static func parseBytes(_ text: String) -> Int64? {
        let s = text.trimmingSpaces
        guard !s.isEmpty else { return nil }
        if let plain = Int64(s), plain >= 0 { return plain }
        for (suffix, factor) in byteUnits where s.hasSuffix(suffix) {
            let number = String(s.dropLast(suffix.count)).trimmingSpaces
            guard let value = Double(number), value >= 0, value.isFinite,
                number.allSatisfy({ $0.isNumber || $0 == "." })
            else { return nil }
            let bytes = value * Double(factor)
            guard bytes < 9.2e18 else { return nil }
            return Int64(bytes.rounded())
        }
        return nil
    }

    /// Parses a rate such as `512KiB/s` into bytes per second.
    public static func parseRate(_ text: String) -> Int64? {
        let s = text.trimmingSpaces
        guard s.hasSuffix("/s") else { return nil }
        guard let bytes = parseBytes(String(s.dropLast(2))), bytes > 0 else { return nil }
        return bytes
    }

    /// A rate limit as the command line takes it: `512KiB/s`, or `512KiB` with the `/s` left out.
    public static func parseRateLimit(_ text: String) -> Int64? {
        if let rate = parseRate(text) { return rate }
        guard let bytes = parseBytes(text), bytes > 0 else { return nil }
        return bytes
    }

    /// Parses a duration made of one or more `<number><unit>` parts, units ms, s, m, h, d:
    /// `200ms`, `5s`, `1h30m`, `1.5s`. A bare `0` is zero.
    public static func parseDuration(_ text: String) -> Duration? {
        let s = text.trimmingSpaces
        if s == "0" { return .zero }
        guard !s.isEmpty else { return nil }
        var total: Double = 0
        var rest = Substring(s)
        var lastRank = Int.max
        while !rest.isEmpty {
            let number = rest.prefix { $0.isNumber || $0 == "." }
            guard !number.isEmpty, let value = Double(number) else { return nil }
            rest = rest.dropFirst(number.count)
            let unit = rest.prefix { $0.isLetter }
            rest = rest.dropFirst(unit.count)
            let (seconds, rank): (Double, Int)
            switch unit {
            case "ms": (seconds, rank) = (0.001, 0)
            case "s": (seconds, rank) = (1, 1)
            case "m", "min": (seconds, rank) = (60, 2)
            case "h": (seconds, rank) = (3600, 3)
            case "d": (seconds, rank) = (86400, 4)
            default: return nil
            }
            guard rank < lastRank else { return nil }  // "5s1h" or "1h1h" are mistakes
            lastRank = rank
            total += value * seconds
        }
        guard total.isFinite, total < 1e12 else { return nil }
        let attos = Int64((total * 1e9).rounded())
        return .nanoseconds(attos)
    }

    /// `1.5 MiB`, `512 B`.
    public static func formatBytes(_ bytes: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes)
        var unit = 0
        while abs(value) >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        if unit == 0 { return "\(bytes) B" }
        return "\(formatted(value, digits: value < 10 ? 2 : 1)) \(units[unit])"
    }

    /// `250ms`, `8s`, `1.5s`, `2m05s`.
    public static func formatDuration(_ duration: Duration) -> String {
        let seconds = duration.seconds
        if seconds < 1 { return "\(Int((seconds * 1000).rounded()))ms" }
        if seconds < 60 {
            return seconds == seconds.rounded() ? "\(Int(seconds))s" : "\(formatted(seconds, digits: 1))s"
        }
        let whole = Int(seconds.rounded())
        if whole < 3600 { return "\(whole / 60)m\(pad2(whole % 60))s" }
        return "\(whole / 3600)h\(pad2((whole % 3600) / 60))m"
    }

    /// A fixed-point decimal without Foundation's formatter.
    public static func formatted(_ value: Double, digits: Int) -> String {
        var factor = 1.0
        for _ in 0..<digits { factor *= 10 }
        let scaled = Int64((value * factor).rounded())
        let sign = scaled < 0 ? "-" : ""
        let magnitude = abs(scaled)
        let whole = magnitude / Int64(factor)
        guard digits > 0 else { return "\(sign)\(whole)" }
        var fraction = String(magnitude % Int64(factor))
        while fraction.count < digits { fraction = "0" + fraction }
        return "\(sign)\(whole).\(fraction)"
    }

    static func pad2(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
}

extension Duration {
    /// The duration in seconds as a Double.
    public var seconds: Double {
        let (s, a) = components
        return Double(s) + Double(a) / 1e18
    }
}

extension String {
    var trimmingSpaces: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}
