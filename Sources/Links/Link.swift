/// One network link as a monitor sees it at one instant. A pure value: no I/O.
public struct Link: Sendable, Hashable, Codable {
    public var index: Int
    public var name: String
    public var kind: LinkKind
    /// The fact that decided `kind`, e.g. `devtype=wlan` or `name=wlan0 (over type=veth)`.
    public var kindSource: String
    /// RFC 2863 operstate as the kernel reports it: `up`, `down`, `dormant`, `unknown`, ...
    public var operstate: String
    /// IFF_UP: administratively up.
    public var up: Bool
    /// IFF_RUNNING: up and with a carrier (operationally usable).
    public var running: Bool
    /// IFF_LOWER_UP: the physical layer reports a carrier.
    public var lowerUp: Bool
    public var mtu: Int
    /// Hardware address, lowercase `aa:bb:...`, or nil when the link has none.
    public var mac: String?
    /// IPv4 addresses in CIDR form, e.g. `192.168.1.20/24`.
    public var ipv4: [String]
    /// IPv6 addresses in CIDR form.
    public var ipv6: [String]
    /// The kernel driver, when known.
    public var driver: String?
    /// The Wi-Fi network name, when known (a scenario, NetworkManager).
    public var ssid: String?
    /// The Wi-Fi access point's hardware address, lowercase, when known.
    public var bssid: String?
    /// A metered hint from outside the kernel (NetworkManager, DHCP option 43), when known.
    public var meteredHint: Bool?
    /// Where `meteredHint` came from, e.g. `networkmanager: guess-yes`.
    public var meteredHintSource: String?
    /// Whether `meteredHint` is the user's explicit setting (NetworkManager's `connection.metered`), which
    /// wins over every guess; false for a guess.
    public var meteredHintExplicit = false
    /// Whether the link's modem says it is roaming, when known (ModemManager).
    public var roaming: Bool?
    /// What the link reaches, when a source says (NetworkManager's connectivity check, a scenario).
    public var connectivity: Connectivity?
    /// Where `connectivity` came from, e.g. `networkmanager`.
    public var connectivitySource: String?
    /// The captive portal's sign-in page, when known (RFC 8910's DHCP option 114, a scenario).
    public var portalURL: String?

    /// The JSON contract is snake_case (docs/api.md).
    enum CodingKeys: String, CodingKey {
        case index, name, kind, operstate, up, running, mtu, mac, ipv4, ipv6, driver, ssid, bssid, roaming
        case kindSource = "kind_source", lowerUp = "lower_up", meteredHint = "metered_hint"
        case meteredHintSource = "metered_hint_source"
        case connectivity, connectivitySource = "connectivity_source", portalURL = "portal_url"
    }

    public init(
        index: Int, name: String, kind: LinkKind, kindSource: String, operstate: String = "unknown",
        up: Bool, running: Bool, lowerUp: Bool? = nil, mtu: Int = 1500, mac: String? = nil,
        ipv4: [String] = [], ipv6: [String] = [], driver: String? = nil, ssid: String? = nil,
        meteredHint: Bool? = nil, meteredHintSource: String? = nil, meteredHintExplicit: Bool = false,
        bssid: String? = nil, roaming: Bool? = nil
    ) {
        self.index = index
        self.name = name
        self.kind = kind
        self.kindSource = kindSource
        self.operstate = operstate
        self.up = up
        self.running = running
        self.lowerUp = lowerUp ?? running
        self.mtu = mtu
        self.mac = mac
        self.ipv4 = ipv4
        self.ipv6 = ipv6
        self.driver = driver
        self.ssid = ssid
        self.meteredHint = meteredHint
        self.meteredHintSource = meteredHint == nil ? nil : (meteredHintSource ?? "unknown")
        self.meteredHintExplicit = meteredHint != nil && meteredHintExplicit
        self.bssid = bssid
        self.roaming = roaming
    }

    /// All addresses, IPv4 first.
    public var addresses: [String] { ipv4 + ipv6 }

    /// Up and running: a link that can carry traffic.
    public var isUsable: Bool { up && running }
}
