import Links
import Logging

/// ModemManager's modems over D-Bus: a modem whose 3GPP registration state is roaming sets `roaming` on the
/// network interface of its bearer, so `when: { roaming: yes }` rules work. Event-driven like
/// `NetworkManagerHints` (PropertiesChanged, InterfacesAdded/Removed, NameOwnerChanged).
public struct ModemManagerHints: LinkHintSource {
    static let service = "org.freedesktop.ModemManager1"
    static let root = "/org/freedesktop/ModemManager1"
    let logger: Logger

    public init(logger: Logger = Logger(label: "meterwise.hints")) {
        self.logger = logger
    }

    public func hints() -> AsyncStream<LinkHints> {
        HintLoop.stream(reader: ModemManagerReader(), logger: logger)
    }
}

/// `MMModem3gppRegistrationState`: which values mean roaming.
public enum ModemRegistration {
    /// roaming (5), roaming-sms-only (7), roaming-csfb-not-preferred (10).
    static let roamingStates: Set<UInt32> = [5, 7, 10]
    /// home (1), home-sms-only (6), home-csfb-not-preferred (9), attached-rlos (11).
    static let homeStates: Set<UInt32> = [1, 6, 9, 11]

    /// The hint one modem's registration state gives its interfaces: roaming yes or no when registered,
    /// nothing when idle, searching, denied or unknown.
    public static func hint(registrationState state: UInt32) -> LinkHint? {
        if roamingStates.contains(state) { return LinkHint(roaming: true) }
        if homeStates.contains(state) { return LinkHint(roaming: false) }
        return nil
    }
}

struct ModemManagerReader: BusHintReader {
    let service = ModemManagerHints.service
    let displayName = "ModemManager"
    var matches: [String] {
        let mm = ModemManagerHints.self
        return [
            Self.propertiesChanged(sender: mm.service, under: mm.root),
            "type='signal',sender='\(mm.service)',interface='org.freedesktop.DBus.ObjectManager'",
        ]
    }

    func read(_ bus: SystemBus) throws(BusError) -> LinkHints {
        let mm = ModemManagerHints.self
        var byName: [String: LinkHint] = [:]
        for modem in try bus.managedObjects(mm.service, mm.root).prefix(64) {
            guard
                let state =
                    (try? bus.property(mm.service, modem, mm.service + ".Modem.Modem3gpp", "RegistrationState"))?
                    .uint32,
                let hint = ModemRegistration.hint(registrationState: state)
            else { continue }
            let bearers = (try? bus.property(mm.service, modem, mm.service + ".Modem", "Bearers"))?.strings ?? []
            for bearer in bearers.prefix(16) {
                guard
                    let interface = (try? bus.property(mm.service, bearer, mm.service + ".Bearer", "Interface"))?
                        .string,
                    !interface.isEmpty
                else { continue }
                byName[interface] = hint
            }
        }
        return LinkHints(byName: byName, sources: ["modemmanager"])
    }
}
