import ConfigKit

/// The largest value each number of a policy file may take (docs/policy.md, "Bounds"). Values are checked
/// when the file is read, so no decision ever computes with an unchecked number.
public enum PolicyBounds {
    /// `defaults.resume_after`: the hysteresis before a paused job resumes; a day is already very long.
    public static let resumeAfter = Cap<Duration>(.seconds(86_400), "24h")
    /// `throttle:` of a rule or of `defaults`: faster than any link Meterwise drives.
    public static let rate = Cap<Int64>(100 << 30, "100GiB/s")
    /// `budget.bytes`.
    public static let budgetBytes = Cap<Int64>(1 << 50, "1PiB")
    /// The values of `when.size` and `when.budget_left` tests.
    public static let sizeTest = Cap<Int64>(1 << 50, "1PiB")
    /// The values of `when.priority` tests: the range a job's priority may take (see JobSpec).
    public static let priority: ClosedRange<Int64> = -1_000_000...1_000_000
    /// `version:`.
    public static let version: ClosedRange<Int> = 1...1_000
}
