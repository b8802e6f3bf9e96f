/// A snapshot as programs read it: `meterwise links --json` and the control API's `GET /v1/links` print
/// this one shape, snake_case like every JSON Meterwise writes (docs/api.md).
public struct LinkSnapshotDocument: Sendable, Hashable, Encodable {
    /// One link, with the facts that decided its kind and whether it is the primary uplink.
    public struct LinkEntry: Sendable, Hashable, Encodable {
        public var index: Int
        public var name: String
        public var kind: String
        public var kindSource: String
        public var operstate: String
        public var up: Bool
        public var running: Bool
        public var lowerUp: Bool
        public var mtu: Int
        public var mac: String?
        public var driver: String?
        public var ssid: String?
        public var bssid: String?
        public var meteredHint: Bool?
        public var meteredHintSource: String?
        /// The built-in verdict `links` prints in its METERED column (explicit hint, phone-hotspot guess,
        /// another source's guess, the kind; before any policy `networks:` rule), and where it came from;
        /// nil where the producer of the document does not classify.
        public var metered: Bool?
        public var meteredSource: String?
        public var roaming: Bool?
        /// `unknown`, `none`, `portal`, `limited`, `full`; nil when no source says.
        public var connectivity: String?
        public var connectivitySource: String?
        public var portalURL: String?
        public var addresses: [String]
        public var primary: Bool

        enum CodingKeys: String, CodingKey {
            case index, name, kind, operstate, up, running, mtu, mac, driver, ssid, bssid, roaming, addresses, primary
            case kindSource = "kind_source", lowerUp = "lower_up", meteredHint = "metered_hint"
            case meteredHintSource = "metered_hint_source", metered, meteredSource = "metered_source"
            case connectivity, connectivitySource = "connectivity_source", portalURL = "portal_url"
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(index, forKey: .index)
            try c.encode(name, forKey: .name)
            try c.encode(kind, forKey: .kind)
            try c.encode(kindSource, forKey: .kindSource)
            try c.encode(operstate, forKey: .operstate)
            try c.encode(up, forKey: .up)
            try c.encode(running, forKey: .running)
            try c.encode(lowerUp, forKey: .lowerUp)
            try c.encode(mtu, forKey: .mtu)
            try c.encode(mac, forKey: .mac)
            try c.encode(driver, forKey: .driver)
            try c.encode(ssid, forKey: .ssid)
            try c.encode(bssid, forKey: .bssid)
            try c.encode(meteredHint, forKey: .meteredHint)
            try c.encode(meteredHintSource, forKey: .meteredHintSource)
            try c.encode(metered, forKey: .metered)
            try c.encode(meteredSource, forKey: .meteredSource)
            try c.encode(roaming, forKey: .roaming)
            try c.encode(connectivity, forKey: .connectivity)
            try c.encode(connectivitySource, forKey: .connectivitySource)
            try c.encode(portalURL, forKey: .portalURL)
            try c.encode(addresses, forKey: .addresses)
            try c.encode(primary, forKey: .primary)
        }
    }

    /// A default route: the candidates for the primary uplink.
    public struct RouteEntry: Sendable, Hashable, Encodable {
        public var family: String
        public var link: String
        public var metric: Int
        public var gateway: String?

        enum CodingKeys: String, CodingKey { case family, link, metric, gateway }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(family, forKey: .family)
            try c.encode(link, forKey: .link)
            try c.encode(metric, forKey: .metric)
            try c.encode(gateway, forKey: .gateway)
        }
    }

    /// When the snapshot was printed (ISO 8601), for `links --watch`; nil otherwise.
    public var at: String?
    public var sequence: UInt64
    public var links: [LinkEntry]
    /// The primary uplink's name, or nil when no link has a usable default route.
    public var primary: String?
    public var defaultRoutes: [RouteEntry]
    /// The hint sources that are running (`networkmanager`); empty when none runs.
    public var hintSources: [String]
    /// The power supply (`on_battery`, `battery_percent`, `battery_state`, `profile`, `sources`); its fields
    /// are absent when no source says.
    public var power: PowerFacts

    enum CodingKeys: String, CodingKey {
        case at, sequence, links, primary
        case defaultRoutes = "default_routes", hintSources = "hint_sources", power
    }

    /// The document of `snapshot`; `verdict` is the built-in metered verdict of a link and its source
    /// (Policy's `NetworkClass.builtInVerdict`), which this module cannot make.
    public init(
        _ snapshot: LinkSnapshot, at: String? = nil,
        verdict: (Link) -> (metered: Bool, source: String)? = { _ in nil }
    ) {
        let primary = snapshot.primary?.name
        self.at = at
        self.sequence = snapshot.sequence
        self.primary = primary
        self.links = snapshot.links.map {
            let verdict = verdict($0)
            return LinkEntry(
                index: $0.index, name: $0.name, kind: $0.kind.rawValue, kindSource: $0.kindSource,
                operstate: $0.operstate, up: $0.up, running: $0.running, lowerUp: $0.lowerUp, mtu: $0.mtu,
                mac: $0.mac, driver: $0.driver, ssid: $0.ssid, bssid: $0.bssid, meteredHint: $0.meteredHint,
                meteredHintSource: $0.meteredHintSource, metered: verdict?.metered, meteredSource: verdict?.source,
                roaming: $0.roaming, connectivity: $0.connectivity?.rawValue, connectivitySource: $0.connectivitySource,
                portalURL: $0.portalURL, addresses: $0.addresses, primary: $0.name == primary)
        }
        self.defaultRoutes = snapshot.defaultRoutes.map {
            RouteEntry(family: $0.family.rawValue, link: $0.link, metric: $0.metric, gateway: $0.gateway)
        }
        self.hintSources = snapshot.hintSources
        self.power = snapshot.power
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(at, forKey: .at)
        try c.encode(sequence, forKey: .sequence)
        try c.encode(links, forKey: .links)
        try c.encode(primary, forKey: .primary)
        try c.encode(defaultRoutes, forKey: .defaultRoutes)
        try c.encode(hintSources, forKey: .hintSources)
        try c.encode(power, forKey: .power)
    }
}
