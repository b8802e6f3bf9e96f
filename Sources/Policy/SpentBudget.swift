import ConfigKit
import Foundation

/// A budget with no bytes left this period: what a paused job's first reason names.
public struct SpentBudget: Sendable, Hashable {
    public var name: String
    /// Bytes counted this period (may exceed `bytes` by what was in flight when it ran out).
    public var used: Int64
    public var bytes: Int64
    public var period: Budget.Period
    /// When the next period starts.
    public var resets: Date

    public init(name: String, used: Int64, bytes: Int64, period: Budget.Period, resets: Date) {
        self.name = name
        self.used = used
        self.bytes = bytes
        self.period = period
        self.resets = resets
    }

    /// `budget cell is used up (6.00 MiB of 6.00 MiB today), resets 00:00 (in 3 h 12 m); rule
    /// `cell-allowance` would run`.
    public func headline(rule: String, action: Action, now: Date, calendar: Calendar) -> String {
        let when: String
        switch period {
        case .daily: when = "today"
        case .weekly: when = "this week"
        case .monthly: when = "this month"
        }
        let left = resets.timeIntervalSince(now)
        let at =
            left < 86_400
            ? Self.clock(resets, calendar: calendar) : DecisionContext.localStamp(resets, calendar: calendar)
        let verb = action == .throttle ? "would run throttled" : "would run"
        return "budget \(name) is used up (\(Units.formatBytes(used)) of \(Units.formatBytes(bytes)) \(when)), "
            + "resets \(at) (in \(Self.span(left))); rule `\(rule)` \(verb)"
    }

    /// `00:00` in the calendar's zone.
    static func clock(_ date: Date, calendar: Calendar) -> String {
        let c = calendar.dateComponents([.hour, .minute], from: date)
        return TimeWindow.clock((c.hour ?? 0) * 60 + (c.minute ?? 0))
    }

    /// `3 h 12 m`, `12 m`, `2 d 3 h`, `under a minute`.
    static func span(_ seconds: TimeInterval) -> String {
        guard seconds.isFinite, seconds >= 60 else { return "under a minute" }
        let minutes = Int(min(seconds, 1e9) / 60)
        let (days, hours, rest) = (minutes / 1440, (minutes % 1440) / 60, minutes % 60)
        if days > 0 { return hours > 0 ? "\(days) d \(hours) h" : "\(days) d" }
        if hours > 0 { return rest > 0 ? "\(hours) h \(rest) m" : "\(hours) h" }
        return "\(rest) m"
    }
}

extension Action {
    /// How much an action lets a job move: pause < throttle < run.
    var allowance: Int {
        switch self {
        case .pause: 0
        case .throttle: 1
        case .run: 2
        }
    }
}
