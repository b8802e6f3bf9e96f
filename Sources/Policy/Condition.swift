import Links

/// The tests of a rule's `when:`. Every test that is set must pass (AND); an unset test passes.
/// Link tests look at the primary uplink; job tests at the job; `window` at the local time.
public struct Condition: Sendable, Hashable {
    public var metered: Bool?
    /// One of these kinds.
    public var kinds: [LinkKind] = []
    /// The link carries all of these labels.
    public var labels: [String] = []
    /// The link's name matches one of these globs.
    public var links: [Glob] = []
    public var roaming: Bool?
    /// The primary uplink's connectivity is one of these (`unknown` when no source says). A rule that tests
    /// it decides for itself; every other rule that moves bytes waits while the primary is behind a portal,
    /// limited or without a network (`ConnectivityGate`).
    public var connectivity: [Connectivity] = []
    /// `power: battery` (true) or `power: ac` (false): UPower's OnBattery.
    public var onBattery: Bool?
    /// The battery's charge in percent passes the comparison (`battery: "< 30%"`).
    public var battery: Comparison?
    /// The power-saver profile is active (`yes`) or not (`no`).
    public var powerSaver: Bool?
    /// The local time is inside one of these windows.
    public var windows: [TimeWindow] = []
    public var size: Comparison?
    public var priority: Comparison?
    /// The job carries all of these tags.
    public var tags: [String] = []
    /// The job's allow-metered override (Android's allowedOverMetered).
    public var allowMetered: Bool?
    /// The job's allow-roaming override; a job that says nothing counts as not allowed.
    public var allowRoaming: Bool?
    /// Bytes left in the rule's budget for the current period.
    public var budgetLeft: Comparison?

    public init() {}

    /// The names of the keys that are set, for explanations.
    public var isEmpty: Bool { self == Condition() }
}
