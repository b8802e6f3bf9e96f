import BlockingIO
import Foundation
import Links
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// NetworkManager's view of links over D-Bus: per device `Metered`, the active access point's SSID and
/// BSSID, and the global `Metered` for the primary connection's device.
///
/// Event-driven: one thread blocks in `poll` on the bus; NetworkManager's `PropertiesChanged` and device
/// signals, and `NameOwnerChanged` for its name (so a restart, a start or a stop is followed), make it
/// read the devices again and yield the hints when they changed. Without a system bus or without
/// NetworkManager it logs one line, yields empty hints and goes on waiting for NetworkManager to appear
/// (no polling); a bus connection that fails is reopened with a bounded back-off.
public struct NetworkManagerHints: LinkHintSource {
    static let service = "org.freedesktop.NetworkManager"
    static let root = "/org/freedesktop/NetworkManager"
    static let deviceInterface = "org.freedesktop.NetworkManager.Device"
    static let wirelessInterface = "org.freedesktop.NetworkManager.Device.Wireless"
    static let accessPointInterface = "org.freedesktop.NetworkManager.AccessPoint"
    static let activeInterface = "org.freedesktop.NetworkManager.Connection.Active"
    static let dhcp4Interface = "org.freedesktop.NetworkManager.DHCP4Config"
    /// NM_DEVICE_TYPE_WIFI.
    static let wifiType: UInt32 = 2

    let logger: Logger

    public init(logger: Logger = Logger(label: "meterwise.hints")) {
        self.logger = logger
    }

    public func hints() -> AsyncStream<LinkHints> {
        HintLoop.stream(reader: NetworkManagerReader(), logger: logger)
    }
}

/// What a bus hint source watches and reads; `HintLoop` does the rest (connection, signals, back-off).
/// Sendable: a reader is made by the caller and then used only on the loop's own thread.
protocol BusHintReader: Sendable {
    /// The well-known name of the service, for `NameOwnerChanged` and `NameHasOwner`.
    var service: String { get }
    /// How the service is called in log lines.
    var displayName: String { get }
    /// The match rules (besides `NameOwnerChanged` for `service`) whose signals mean "read again".
    var matches: [String] { get }
    /// The match rules for `PropertiesChanged` signals whose `SystemBus.quickKeys` values `quickUpdate` can use.
    var quickMatches: [String] { get }
    /// The hints now; called on the loop's thread with the service running.
    mutating func read(_ bus: SystemBus) throws(BusError) -> LinkHints
    /// The hints after these changes (object path, property, value), from what the last `read` learnt and
    /// without any call on the bus; nil when that is not enough to tell.
    mutating func quickUpdate(_ changes: [PropertyChange]) -> LinkHints?
}

extension BusHintReader {
    var quickMatches: [String] { [] }
    mutating func quickUpdate(_ changes: [PropertyChange]) -> LinkHints? { nil }

    /// The match rule for every `PropertiesChanged` that `sender` emits on objects under `root`.
    static func propertiesChanged(sender: String, under root: String) -> String {
        "type='signal',sender='\(sender)',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',"
            + "path_namespace='\(root)'"
    }
}

/// The loop of one `hints()` stream, on its own thread (`PollThread`): it owns the bus connection.
final class HintLoop<Reader: BusHintReader> {
    let logger: Logger
    let waiter: PollWaiter<LinkHints>
    var reader: Reader
    var last: LinkHints?
    var saidNotRunning = false

    init(reader: Reader, logger: Logger, waiter: PollWaiter<LinkHints>) {
        self.reader = reader
        self.logger = logger
        self.waiter = waiter
    }

    /// A stream of `reader`'s hints, served by a loop on a thread of its own until the consumer goes away.
    static func stream(reader: Reader, logger: Logger) -> AsyncStream<LinkHints> {
        PollThread.stream(named: "mw-hints", bufferingPolicy: .bufferingNewest(1)) { waiter in
            HintLoop(reader: reader, logger: logger, waiter: waiter).run()
        }
    }

    func run() {
        var backoff = 1
        while !waiter.isStopped {
            let bus: SystemBus
            do {
                bus = try SystemBus()
                try watch(on: bus)
            } catch {
                if last == nil {
                    logger.info("no system D-Bus (\(error)): no link hints from \(reader.displayName)")
                    publish(.none)
                    return
                }
                publish(.none)
                logger.warning("system D-Bus: \(error); trying again in \(backoff) s")
                if waiter.sleep(for: .seconds(backoff)) { return }
                backoff = min(backoff * 2, 60)
                continue
            }
            backoff = 1
            bus.changed.raised = true
            do {
                try serve(bus)
                return
            } catch {
                logger.warning("system D-Bus: \(error); reconnecting")
                publish(.none)
            }
        }
    }

    func watch(on bus: SystemBus) throws(BusError) {
        try bus.watch(
            "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                + "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(reader.service)'")
        for rule in reader.matches { try bus.watch(rule) }
        for rule in reader.quickMatches { try bus.watchQuick(rule) }
    }

    /// Waits for signals and re-reads NetworkManager after each burst; returns when stopped.
    func serve(_ bus: SystemBus) throws(BusError) {
        while !waiter.isStopped {
            try bus.processPending()
            if bus.changed.raised {
                bus.changed.raised = false
                // A Metered or connectivity change the signal itself carries is published at once: reading
                // the service again takes round trips while it is busy applying the change. The full read
                // follows.
                let values = bus.changed.values
                bus.changed.values = []
                if !values.isEmpty, let quick = reader.quickUpdate(values) { publish(quick) }
                // A signal of the burst that comes while the service is read (NetworkManager sends its
                // connection's signals a few ms before the device's `Metered`) is published as it comes, from
                // what was known before the read, not after the read's round trips; the read's result then
                // takes it too, being older than the signal or the same.
                var before = reader
                var during: [PropertyChange] = []
                bus.afterCall = { [unowned self, unowned bus] in
                    guard (try? bus.processPending()) != nil, !bus.changed.values.isEmpty else { return }
                    let more = bus.changed.values
                    bus.changed.values = []
                    during += more
                    if let quick = before.quickUpdate(more) { self.publish(quick) }
                }
                var hints = read(bus)
                bus.afterCall = nil
                if !during.isEmpty, let updated = reader.quickUpdate(during) { hints = updated }
                publish(hints)
                // Signals that arrived during the calls were queued by sd-bus: handle them first.
                continue
            }
            let request = bus.pollRequest()
            let timeout = request.timeoutMilliseconds < 0 ? nil : Duration.milliseconds(request.timeoutMilliseconds)
            do {
                _ = try waiter.wait(for: [PollDescriptor(request.fd, events: request.events)], timeout: timeout)
            } catch {
                throw BusError(what: "poll on the system bus failed", code: -error.errno)
            }
        }
    }

    /// The reader's hints now; empty when the service does not run or answers nonsense.
    func read(_ bus: SystemBus) -> LinkHints {
        do {
            guard try bus.nameHasOwner(reader.service) else {
                if !saidNotRunning {
                    logger.info("\(reader.displayName) is not running: no hints from it (followed if it starts)")
                    saidNotRunning = true
                }
                return .none
            }
            saidNotRunning = false
            return try reader.read(bus)
        } catch {
            logger.debug("reading \(reader.displayName): \(error)")
            return .none
        }
    }

    func publish(_ hints: LinkHints) {
        guard hints != last else { return }
        last = hints
        waiter.yield(hints)
    }
}

/// NetworkManager's devices: `Metered`, `Ip4Connectivity` and `Ip6Connectivity`, the active access point's
/// SSID and BSSID, the global `Metered` and `Connectivity`.
struct NetworkManagerReader: BusHintReader {
    let service = NetworkManagerHints.service
    let displayName = "NetworkManager"
    /// What the last read found: devices by object path, the global Metered and Connectivity.
    var devices: [String: NetworkManagerDevice] = [:]
    var global = NetworkManagerMetered.unknown
    var globalConnectivity = Connectivity.unknown

    var matches: [String] {
        let nm = NetworkManagerHints.self
        return ["type='signal',sender='\(nm.service)',interface='\(nm.service)',path='\(nm.root)'"]
    }

    var quickMatches: [String] {
        [Self.propertiesChanged(sender: NetworkManagerHints.service, under: NetworkManagerHints.root)]
    }

    mutating func quickUpdate(_ changes: [PropertyChange]) -> LinkHints? {
        guard !devices.isEmpty else { return nil }
        for change in changes {
            let isRoot = change.path == NetworkManagerHints.root
            guard isRoot || devices[change.path] != nil else { continue }
            switch change.key {
            case "Metered":
                guard let value = NetworkManagerMetered(rawValue: change.value) else { return nil }
                if isRoot { global = value } else { devices[change.path]?.metered = value }
            case "Connectivity" where isRoot:
                guard let value = Connectivity(networkManager: change.value) else { return nil }
                globalConnectivity = value
            case "Ip4Connectivity", "Ip6Connectivity":
                guard !isRoot, let value = Connectivity(networkManager: change.value) else { return nil }
                if change.key == "Ip4Connectivity" {
                    devices[change.path]?.ip4Connectivity = value
                } else {
                    devices[change.path]?.ip6Connectivity = value
                }
            default:
                continue
            }
        }
        return NetworkManagerDevice.hints(
            devices.keys.sorted().compactMap { devices[$0] }, global: global, connectivity: globalConnectivity)
    }

    mutating func read(_ bus: SystemBus) throws(BusError) -> LinkHints {
        let nm = NetworkManagerHints.self
        let global =
            NetworkManagerMetered(
                rawValue: (try? bus.property(nm.service, nm.root, nm.service, "Metered"))?.uint32 ?? 0) ?? .unknown
        let connectivity =
            Connectivity(
                networkManager: (try? bus.property(nm.service, nm.root, nm.service, "Connectivity"))?.uint32 ?? 0)
            ?? .unknown
        let primaryDevices = Set(primaryConnectionDevices(bus))
        let paths = try bus.property(nm.service, nm.root, nm.service, "Devices").strings ?? []
        var devices: [String: NetworkManagerDevice] = [:]
        for path in paths.prefix(512) {
            guard let device = readDevice(bus, path: path, isPrimary: primaryDevices.contains(path)) else { continue }
            devices[path] = device
        }
        self.devices = devices
        self.global = global
        self.globalConnectivity = connectivity
        return NetworkManagerDevice.hints(paths.compactMap { devices[$0] }, global: global, connectivity: connectivity)
    }

    func primaryConnectionDevices(_ bus: SystemBus) -> [String] {
        let nm = NetworkManagerHints.self
        guard let active = (try? bus.property(nm.service, nm.root, nm.service, "PrimaryConnection"))?.string,
            active != "/"
        else { return [] }
        return (try? bus.property(nm.service, active, nm.activeInterface, "Devices"))?.strings ?? []
    }

    /// One device; nil when it vanished meanwhile.
    func readDevice(_ bus: SystemBus, path: String, isPrimary: Bool) -> NetworkManagerDevice? {
        let nm = NetworkManagerHints.self
        guard let interface = (try? bus.property(nm.service, path, nm.deviceInterface, "Interface"))?.string else {
            return nil
        }
        let metered = (try? bus.property(nm.service, path, nm.deviceInterface, "Metered"))?.uint32 ?? 0
        var device = NetworkManagerDevice(
            interface: interface, metered: NetworkManagerMetered(rawValue: metered) ?? .unknown, isPrimary: isPrimary)
        // NetworkManager 1.16 and later; older ones leave them unknown (the global state then speaks).
        for (key, family) in [("Ip4Connectivity", 4), ("Ip6Connectivity", 6)] {
            let raw = (try? bus.property(nm.service, path, nm.deviceInterface, key))?.uint32 ?? 0
            let value = Connectivity(networkManager: raw) ?? .unknown
            if family == 4 { device.ip4Connectivity = value } else { device.ip6Connectivity = value }
        }
        // Option 114 as NetworkManager's own DHCP client keeps it (RFC 8910): the portal's API, asked by
        // `PortalAPIHints`.
        if let config = (try? bus.property(nm.service, path, nm.deviceInterface, "Dhcp4Config"))?.string, config != "/",
            let options = (try? bus.property(nm.service, config, nm.dhcp4Interface, "Options"))?.dictionary
        {
            device.portalAPI = options["v4_captive_portal"]
        }
        let type = (try? bus.property(nm.service, path, nm.deviceInterface, "DeviceType"))?.uint32
        if type == nm.wifiType,
            let ap = (try? bus.property(nm.service, path, nm.wirelessInterface, "ActiveAccessPoint"))?.string, ap != "/"
        {
            device.ssid = (try? bus.property(nm.service, ap, nm.accessPointInterface, "Ssid"))?.bytes
            device.bssid = (try? bus.property(nm.service, ap, nm.accessPointInterface, "HwAddress"))?.string
        }
        return device
    }
}
