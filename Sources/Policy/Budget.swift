import Foundation

/// A data allowance: `bytes` per `period`, resetting at a local instant (`resets`). A rule with a budget
/// matches only while the budget has bytes left; the bytes a job moves under that rule count against it.
public struct Budget: Sendable, Hashable {
    public enum Period: String, Sendable, Hashable, CaseIterable {
        case daily, weekly, monthly
    }

    /// The budget's name; rules that name the same budget share it. Defaults to the rule's name.
    public var name: String
    public var bytes: Int64
    public var period: Period
    /// Minutes after local midnight at which the period resets.
    public var resetMinute: Int
    /// For weekly budgets, the weekday the period starts (1 = Sunday ... 7 = Saturday); Monday by default.
    public var resetWeekday: Int
    /// For monthly budgets, the day of the month the period starts (1...28).
    public var resetDay: Int
    /// Each user (a job's owner, the asker of a question or report) has the whole allowance to themselves
    /// (`per_user: yes`): one user's bytes never spend another's.
    public var perUser = false

    public static let resetsHint = """
        daily: `resets: \"03:00\"`; weekly: `resets: mon` or `resets: mon 03:00`; monthly: `resets: 1` or \
        `resets: 15 03:00` (day 1...28)
        """

    public init(
        name: String, bytes: Int64, period: Period, resetMinute: Int = 0, resetWeekday: Int = 2, resetDay: Int = 1
    ) {
        self.name = name
        self.bytes = bytes
        self.period = period
        self.resetMinute = resetMinute
        self.resetWeekday = resetWeekday
        self.resetDay = resetDay
    }

    /// The start of the period containing `now`, and the start of the next one, in `calendar`'s zone.
    public func period(containing now: Date, calendar: Calendar) -> (start: Date, end: Date) {
        let c = calendar.dateComponents([.year, .month, .day, .weekday], from: now)
        let (y, m, d) = (c.year!, c.month!, c.day!)
        let hour = resetMinute / 60
        let minute = resetMinute % 60
        func at(_ y: Int, _ m: Int, _ d: Int) -> Date {
            // DateComponents normalise out-of-range days and months (day 0 is the last of the previous month).
            calendar.date(from: DateComponents(year: y, month: m, day: d, hour: hour, minute: minute)) ?? now
        }
        switch period {
        case .daily:
            let today = at(y, m, d)
            if today <= now { return (today, at(y, m, d + 1)) }
            return (at(y, m, d - 1), today)
        case .weekly:
            let back = (c.weekday! - resetWeekday + 7) % 7
            let candidate = at(y, m, d - back)
            if candidate <= now { return (candidate, at(y, m, d - back + 7)) }
            return (at(y, m, d - back - 7), candidate)
        case .monthly:
            let candidate = at(y, m, resetDay)
            if candidate <= now { return (candidate, at(y, m + 1, resetDay)) }
            return (at(y, m - 1, resetDay), candidate)
        }
    }

    /// The ledger key for the period containing `now`: the name and the period's start in UTC, so a new
    /// period starts a new count by itself.
    public func key(at now: Date, calendar: Calendar, owner: UInt32? = nil) -> String {
        key(start: period(containing: now, calendar: calendar).start, owner: owner)
    }

    /// `name@start`, or `name@start~uid` for a per-user budget (a job without an owner is root's).
    func key(start: Date, owner: UInt32?) -> String {
        let shared = "\(name)@\(Int64(start.timeIntervalSince1970))"
        return perUser ? shared + "~\(owner ?? 0)" : shared
    }
}
