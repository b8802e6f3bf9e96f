import Foundation

/// A local time window: a set of weekdays and `HH:MM-HH:MM`, which may wrap midnight (`23:00-06:00`).
/// For a wrapping window the days name the day the window starts on: `fri 23:00-02:00` includes
/// Saturday 01:00. Evaluated on the local wall clock, so a window keeps its local hours across DST.
public struct TimeWindow: Sendable, Hashable, CustomStringConvertible {
    /// Minutes after local midnight, 0..<1440.
    public var start: Int
    /// Minutes after local midnight, 1...1440 (1440 is `24:00`).
    public var end: Int
    /// Weekdays, 1 = Sunday ... 7 = Saturday (Calendar's numbering). All seven when not restricted.
    public var days: Set<Int>

    public static let everyDay: Set<Int> = Set(1...7)
    static let dayNames = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]

    /// The hint shown when a time window does not parse.
    public static let hint =
        "write a window as HH:MM-HH:MM in 24-hour local time, e.g. 01:00-05:00 or 22:00-06:00 (wraps midnight)"
    /// The hint shown when a day does not parse.
    public static let dayHint =
        "days are mon, tue, wed, thu, fri, sat, sun, ranges like mon-fri, or weekdays / weekend / daily"

    public init(start: Int, end: Int, days: Set<Int> = everyDay) {
        self.start = start
        self.end = end
        self.days = days
    }

    public var wraps: Bool { end <= start }

    public var description: String {
        let hours = "\(Self.clock(start))-\(Self.clock(end))"
        if days == Self.everyDay { return hours }
        return days.sorted { ($0 + 5) % 7 < ($1 + 5) % 7 }.map { Self.dayNames[$0 - 1] }.joined(separator: ",") + " "
            + hours
    }

    static func clock(_ minutes: Int) -> String {
        let h = minutes / 60
        let m = minutes % 60
        return (h < 10 ? "0\(h)" : "\(h)") + ":" + (m < 10 ? "0\(m)" : "\(m)")
    }

    /// Parses `HH:MM-HH:MM`. `24:00` is allowed as an end; equal start and end are rejected.
    public static func parseHours(_ text: String) -> (start: Int, end: Int)? {
        let parts = text.filter { $0 != " " }.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let start = minutes(parts[0], allow24: false),
            let end = minutes(parts[1], allow24: true),
            start != end
        else { return nil }
        return (start, end == 0 ? 1440 : end)
    }

    /// `HH:MM` to minutes after midnight.
    public static func minutes<S: StringProtocol>(_ text: S, allow24: Bool) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count <= 2, parts[1].count == 2,
            parts[0].allSatisfy(\.isASCII), parts[1].allSatisfy(\.isASCII),
            let h = Int(parts[0]), let m = Int(parts[1]), (0...59).contains(m)
        else { return nil }
        if h == 24 && m == 0 && allow24 { return 1440 }
        guard (0...23).contains(h) else { return nil }
        return h * 60 + m
    }

    /// Parses one day item: `mon`, `mon-fri`, `weekdays`, `weekend`, `daily`.
    public static func parseDays(_ text: String) -> Set<Int>? {
        let t = text.lowercased()
        switch t {
        case "daily", "all", "everyday": return everyDay
        case "weekdays": return [2, 3, 4, 5, 6]
        case "weekend", "weekends": return [1, 7]
        default: break
        }
        let full = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]
        func day(_ s: Substring) -> Int? {
            if let i = dayNames.firstIndex(of: String(s)) { return i + 1 }
            if let i = full.firstIndex(of: String(s)) { return i + 1 }
            return nil
        }
        let parts = t.split(separator: "-", omittingEmptySubsequences: false)
        if parts.count == 1, let d = day(parts[0]) { return [d] }
        if parts.count == 2, let a = day(parts[0]), let b = day(parts[1]) {
            // Ranges go forward through the week (mon=2 ... sat=7, sun=1), and may wrap (fri-mon).
            var result: Set<Int> = []
            var d = a
            while true {
                result.insert(d)
                if d == b { break }
                d = d % 7 + 1
            }
            return result
        }
        return nil
    }

    /// Whether local weekday `weekday` (1 = Sunday) at `minute` after midnight is inside the window.
    public func contains(weekday: Int, minute: Int) -> Bool {
        if !wraps {
            return days.contains(weekday) && minute >= start && minute < end
        }
        let previous = weekday == 1 ? 7 : weekday - 1
        return (days.contains(weekday) && minute >= start) || (days.contains(previous) && minute < end)
    }
}
