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

    /// The largest size any file or option may give (1 EiB); fields have smaller caps. Sizes below it
    /// can be added together without overflow.
    public static let maxBytes: Int64 = 1 << 60
    /// The longest duration any file or option may give (100 years); fields have smaller caps. It fits a
    /// `Duration` in nanoseconds many times over.
    public static let maxDuration: Duration = .seconds(100 * 365 * 86_400)

    /// What a unit parser made of a text: a value, a well-written number too large for any use, or text
    /// that is not a number with a unit at all. Callers say "must be at most ..." for `.tooLarge`.
    public enum Reading<Value: Sendable & Equatable>: Sendable, Equatable {
        case value(Value)
        case tooLarge
        case malformed

        /// The value, if there is one.
        public var value: Value? {
            if case .value(let value) = self { return value }
            return nil
        }
    }

    /// Parses a byte size: a plain integer is bytes; units are binary (KiB, MiB, GiB, TiB, or K/M/G) or
    /// decimal (KB, MB, GB, TB). Fractions are allowed with a unit (`1.5GiB`). Nil when malformed or over
    /// `maxBytes`.
    public static func parseBytes(_ text: String) -> Int64? {
        readBytes(text).value
    }

    /// `parseBytes`, saying whether a failure is a malformed text or a size over `maxBytes`. Computed in
    /// integers with overflow checks; no floating point, so no `inf`, `nan` or rounding surprises.
    public static func readBytes(_ text: String) -> Reading<Int64> {
        let s = text.trimmingSpaces
        guard !s.isEmpty else { return .malformed }
        if s.utf8.allSatisfy(isDigit) { return decimal(Substring(s), times: 1, limit: maxBytes, fractions: false) }
        for (suffix, factor) in byteUnits where s.hasSuffix(suffix) {
            let number = Substring(String(s.dropLast(suffix.count)).trimmingSpaces)
            return decimal(number, times: factor, limit: maxBytes, fractions: true)
        }
        return .malformed
    }

    /// Parses a rate such as `512KiB/s` into bytes per second.
    public static func parseRate(_ text: String) -> Int64? {
        readRate(text).value
    }

    /// `parseRate`, saying whether a failure is a malformed text or a rate over `maxBytes` per second.
    public static func readRate(_ text: String) -> Reading<Int64> {
        let s = text.trimmingSpaces
        guard s.hasSuffix("/s") else { return .malformed }
        let reading = readBytes(String(s.dropLast(2)))
        if case .value(let bytes) = reading, bytes <= 0 { return .malformed }
        return reading
    }

    /// A rate limit as the command line takes it: `512KiB/s`, or `512KiB` with the `/s` left out.
    public static func parseRateLimit(_ text: String) -> Int64? {
        if let rate = parseRate(text) { return rate }
        guard let bytes = parseBytes(text), bytes > 0 else { return nil }
        return bytes
    }

    /// Parses a duration made of one or more `<number><unit>` parts, units ms, s, m, h, d:
    /// `200ms`, `5s`, `1h30m`, `1.5s`. A bare `0` is zero. Nil when malformed or over `maxDuration`.
    public static func parseDuration(_ text: String) -> Duration? {
        readDuration(text).value
    }

    /// `parseDuration`, saying whether a failure is a malformed text or a duration over `maxDuration`.
    /// Computed in integer nanoseconds with overflow checks.
    public static func readDuration(_ text: String) -> Reading<Duration> {
        let s = text.trimmingSpaces
        if s == "0" { return .value(.zero) }
        guard !s.isEmpty else { return .malformed }
        let limit = maxDuration.components.seconds * 1_000_000_000
        var total: Int64 = 0
        var tooLarge = false
        var rest = Substring(s)
        var lastRank = Int.max
        while !rest.isEmpty {
            let number = rest.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
            guard !number.isEmpty else { return .malformed }
            rest = rest.dropFirst(number.count)
            let unit = rest.prefix { $0.isLetter }
            rest = rest.dropFirst(unit.count)
            let (nanoseconds, rank): (Int64, Int)
            switch unit {
            case "ms": (nanoseconds, rank) = (1_000_000, 0)
            case "s": (nanoseconds, rank) = (1_000_000_000, 1)
            case "m", "min": (nanoseconds, rank) = (60_000_000_000, 2)
            case "h": (nanoseconds, rank) = (3_600_000_000_000, 3)
            case "d": (nanoseconds, rank) = (86_400_000_000_000, 4)
            default: return .malformed
            }
            guard rank < lastRank else { return .malformed }  // "5s1h" or "1h1h" are mistakes
            lastRank = rank
            switch decimal(number, times: nanoseconds, limit: limit, fractions: true) {
            case .malformed: return .malformed
            case .tooLarge: tooLarge = true  // keep reading: a later part may be malformed
            case .value(let part):
                // Both are at most `limit` (about 3.2e18), so the sum fits in Int64.
                total += part
                if total > limit { tooLarge = true }
            }
        }
        if tooLarge { return .tooLarge }
        return .value(.nanoseconds(total))
    }

    /// `digits[.digits]` times `unit`, rounded half up to an integer; `.tooLarge` above `limit`. Every step
    /// is overflow-checked; fraction digits past the 18th are ignored (they are below any unit's precision).
    static func decimal(_ text: Substring, times unit: Int64, limit: Int64, fractions: Bool) -> Reading<Int64> {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let wholeDigits = parts[0].utf8
        let fractionDigits = parts.count == 2 ? parts[1].utf8 : Substring("").utf8
        guard !wholeDigits.isEmpty || !fractionDigits.isEmpty,
            wholeDigits.allSatisfy(isDigit), fractionDigits.allSatisfy(isDigit),
            parts.count == 1 || (fractions && !fractionDigits.isEmpty)
        else { return .malformed }
        var whole: Int64 = 0
        for digit in wholeDigits {
            let (times10, o1) = whole.multipliedReportingOverflow(by: 10)
            let (next, o2) = times10.addingReportingOverflow(Int64(digit - 48))
            if o1 || o2 || next > limit { return .tooLarge }
            whole = next
        }
        let (scaled, overflow) = whole.multipliedReportingOverflow(by: unit)
        if overflow || scaled > limit { return .tooLarge }
        var fraction: Int64 = 0
        var divisor: Int64 = 1
        for digit in fractionDigits.prefix(18) {
            fraction = fraction * 10 + Int64(digit - 48)  // at most 18 digits: below 1e18
            divisor *= 10
        }
        // fraction * unit / divisor < unit, so the quotient fits; the product is taken in full width.
        let (quotient, remainder) = divisor.dividingFullWidth(fraction.multipliedFullWidth(by: unit))
        let part = quotient + (remainder >= divisor - remainder ? 1 : 0)
        let (result, o3) = scaled.addingReportingOverflow(part)
        if o3 || result > limit { return .tooLarge }
        return .value(result)
    }

    static func isDigit(_ byte: UInt8) -> Bool { byte >= 48 && byte <= 57 }

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
        // Int conversions below trap past 9.2e18: durations that long are printed as Swift prints them.
        guard seconds.isFinite, abs(seconds) < 1e15 else { return "\(duration)" }
        if seconds < 0 { return "-" + formatDuration(.zero - duration) }
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
        for _ in 0..<min(max(digits, 0), 15) { factor *= 10 }
        // Int64 conversion traps on NaN, infinities and magnitudes past 9.2e18: print those as they are.
        guard value.isFinite, abs(value * factor) < 9e18 else { return "\(value)" }
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
