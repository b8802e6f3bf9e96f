/// What the machine's power supply says (UPower, power-profiles-daemon, a scenario): on battery or not, the
/// battery's charge, the power profile. Every field is optional: nil means no source says (a desktop or an
/// edge device without UPower, a machine without a battery).
public struct PowerFacts: Sendable, Hashable, Codable {
    /// On battery (`true`) or on AC (`false`), as UPower's `OnBattery` says.
    public var onBattery: Bool?
    /// The battery's charge in percent (UPower's display device), 0–100.
    public var batteryPercent: Double?
    /// The battery's state (`charging`, `discharging`, `fully-charged`, ...).
    public var batteryState: String?
    /// The active power profile (`power-saver`, `balanced`, `performance`).
    public var profile: String?
    /// Where these came from (`upower`, `power-profiles-daemon`, `scenario`).
    public var sources: [String] = []

    enum CodingKeys: String, CodingKey {
        case onBattery = "on_battery", batteryPercent = "battery_percent", batteryState = "battery_state"
        case profile, sources
    }

    public init(
        onBattery: Bool? = nil, batteryPercent: Double? = nil, batteryState: String? = nil, profile: String? = nil,
        sources: [String] = []
    ) {
        self.onBattery = onBattery
        self.batteryPercent = batteryPercent
        self.batteryState = batteryState
        self.profile = profile
        self.sources = sources
    }

    public static let unknown = PowerFacts()

    /// Whether the power-saver profile is active; nil when no source says.
    public var powerSaver: Bool? { profile.map { $0 == "power-saver" } }

    /// These facts with the gaps filled from `other`.
    public func filling(from other: PowerFacts) -> PowerFacts {
        PowerFacts(
            onBattery: onBattery ?? other.onBattery, batteryPercent: batteryPercent ?? other.batteryPercent,
            batteryState: batteryState ?? other.batteryState, profile: profile ?? other.profile,
            sources: sources + other.sources.filter { !sources.contains($0) })
    }

    /// `battery 18% (discharging), power-saver`: for `links` and explanations; `unknown` when nothing is known.
    public var summary: String {
        var parts: [String] = []
        if let onBattery { parts.append(onBattery ? "on battery" : "on AC") }
        if let batteryPercent {
            parts.append("battery \(Int(batteryPercent.rounded()))%" + (batteryState.map { " (\($0))" } ?? ""))
        }
        if let profile { parts.append("profile \(profile)") }
        return parts.isEmpty ? "unknown" : parts.joined(separator: ", ")
    }
}
