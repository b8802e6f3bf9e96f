import Links

/// NetworkManager's `NMMetered` (the `Metered` property of a device and of NetworkManager itself).
public enum NetworkManagerMetered: UInt32, Sendable, CaseIterable {
    case unknown = 0
    case yes = 1
    case no = 2
    case guessYes = 3
    case guessNo = 4

    /// `guess-yes`, as `nmcli` and Meterwise's output spell it.
    public var name: String {
        switch self {
        case .unknown: "unknown"
        case .yes: "yes"
        case .no: "no"
        case .guessYes: "guess-yes"
        case .guessNo: "guess-no"
        }
    }

    /// The hint this value gives: none for `unknown`; `yes`/`no` are the user's explicit setting
    /// (`connection.metered`), the guesses NetworkManager's own (DHCP option 43 `ANDROID_METERED`, the
    /// device type).
    public var hint: LinkHint? {
        switch self {
        case .unknown: nil
        case .yes, .no:
            LinkHint(metered: self == .yes, meteredSource: "networkmanager: \(name)", explicit: true)
        case .guessYes, .guessNo:
            LinkHint(metered: self == .guessYes, meteredSource: "networkmanager: \(name)", explicit: false)
        }
    }
}

/// What NetworkManager says about one device, as read over D-Bus.
public struct NetworkManagerDevice: Sendable, Hashable {
    public var interface: String
    public var metered: NetworkManagerMetered
    public var ssid: [UInt8]?
    public var bssid: String?
    /// The device carries NetworkManager's primary connection.
    public var isPrimary: Bool
    /// NetworkManager's connectivity check per address family (`Ip4Connectivity`, `Ip6Connectivity`).
    public var ip4Connectivity = Connectivity.unknown
    public var ip6Connectivity = Connectivity.unknown
    /// The captive portal API its DHCP lease names (option 114, RFC 8910), checked as a lease's is.
    public var portalAPI: String?

    public init(
        interface: String, metered: NetworkManagerMetered, ssid: [UInt8]? = nil, bssid: String? = nil,
        isPrimary: Bool = false
    ) {
        self.interface = interface
        self.metered = metered
        self.ssid = ssid
        self.bssid = bssid
        self.isPrimary = isPrimary
    }

    /// The hints of every device: its own `Metered`, or NetworkManager's global `Metered` for the device
    /// of the primary connection when the device's own is unknown; its connectivity (the better of IPv4's and
    /// IPv6's, or the global `Connectivity` for the primary connection's device when both are unknown); SSID
    /// and BSSID when known. Pure.
    public static func hints(
        _ devices: [NetworkManagerDevice], global: NetworkManagerMetered, connectivity: Connectivity = .unknown
    ) -> LinkHints {
        var byName: [String: LinkHint] = [:]
        for device in devices where !device.interface.isEmpty {
            var hint = device.metered.hint ?? (device.isPrimary ? global.hint : nil) ?? LinkHint()
            var reached = Connectivity.combined(device.ip4Connectivity, device.ip6Connectivity)
            if reached == .unknown, device.isPrimary { reached = connectivity }
            if reached != .unknown {
                hint.connectivity = reached
                hint.connectivitySource = "networkmanager"
            }
            hint.ssid = device.ssid.flatMap(Self.ssidText)
            hint.bssid = device.bssid.flatMap { $0.isEmpty ? nil : $0.lowercased() }
            hint.portalAPI = device.portalAPI.flatMap { NetworkdLease.portalAPI(Substring($0)) }
            if hint != LinkHint() { byName[device.interface] = hint }
        }
        return LinkHints(byName: byName, sources: ["networkmanager"])
    }

    /// An SSID's bytes as text: UTF-8 when valid, else hex (SSIDs are arbitrary bytes); nil when empty. The
    /// same rendering as every other source's (`LinkHint.ssidText`).
    static func ssidText(_ bytes: [UInt8]) -> String? {
        LinkHint.ssidText(bytes)
    }
}
