import Links
import Logging

/// The machine's power supply over the system bus: UPower's `OnBattery` and its display device (`Percentage`,
/// `State`, only when a battery is present), and power-profiles-daemon's `ActiveProfile`. Event-driven like
/// `NetworkManagerHints` (`PropertiesChanged`, `NameOwnerChanged`: a restart of either service is followed);
/// a service that does not run says nothing (one log line) and its facts are unknown.
public struct PowerHints: LinkHintSource {
    /// Which service this source reads.
    public enum Service: Sendable {
        case upower
        case powerProfiles
    }

    let service: Service
    let logger: Logger

    public init(_ service: Service, logger: Logger = Logger(label: "meterwise.hints")) {
        self.service = service
        self.logger = logger
    }

    public func hints() -> AsyncStream<LinkHints> {
        switch service {
        case .upower: HintLoop.stream(reader: UPowerReader(), logger: logger)
        case .powerProfiles: HintLoop.stream(reader: PowerProfilesReader(), logger: logger)
        }
    }
}

/// UPower's `UpDeviceState`, by name.
public enum BatteryState {
    static let names = [
        1: "charging", 2: "discharging", 3: "empty", 4: "fully-charged", 5: "pending-charge", 6: "pending-discharge",
    ]

    /// The state's name; nil for unknown (0) and numbers UPower does not define.
    public static func name(_ value: UInt32) -> String? { names[Int(value)] }

    /// A percentage UPower reported, when it is one (0–100, a number).
    public static func percent(_ value: Double) -> Double? {
        value.isFinite && (0...100).contains(value) ? value : nil
    }
}

struct UPowerReader: BusHintReader {
    static let root = "/org/freedesktop/UPower"
    static let display = "/org/freedesktop/UPower/devices/DisplayDevice"
    let service = "org.freedesktop.UPower"
    let displayName = "UPower"
    var matches: [String] { [Self.propertiesChanged(sender: service, under: Self.root)] }

    func read(_ bus: SystemBus) throws(BusError) -> LinkHints {
        var power = PowerFacts(sources: ["upower"])
        power.onBattery = try bus.property(service, Self.root, service, "OnBattery").bool
        let device = service + ".Device"
        // A machine without a battery has a display device that is not present: no percentage then.
        if (try? bus.property(service, Self.display, device, "IsPresent"))?.bool == true {
            power.batteryPercent = (try? bus.property(service, Self.display, device, "Percentage"))?.double
                .flatMap(BatteryState.percent)
            power.batteryState = (try? bus.property(service, Self.display, device, "State"))?.uint32
                .flatMap(BatteryState.name)
        }
        return LinkHints(byName: [:], sources: ["upower"], power: power)
    }
}

struct PowerProfilesReader: BusHintReader {
    static let root = "/net/hadess/PowerProfiles"
    /// The name power-profiles-daemon has always owned (newer ones own `org.freedesktop.UPower.PowerProfiles`
    /// too).
    let service = "net.hadess.PowerProfiles"
    let displayName = "power-profiles-daemon"
    var matches: [String] { [Self.propertiesChanged(sender: service, under: Self.root)] }

    func read(_ bus: SystemBus) throws(BusError) -> LinkHints {
        let profile = try bus.property(service, Self.root, service, "ActiveProfile").string
        let known = profile.flatMap { $0.utf8.count <= 64 && !$0.isEmpty ? $0 : nil }
        return LinkHints(
            byName: [:], sources: ["power-profiles-daemon"],
            power: PowerFacts(profile: known, sources: ["power-profiles-daemon"]))
    }
}
