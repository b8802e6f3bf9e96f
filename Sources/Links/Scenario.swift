/// A scripted timeline of link states, replayed by `ScenarioLinkMonitor`. See docs/scenarios.md.
public struct Scenario: Sendable, Hashable {
    /// A link the scenario knows about, with its fixed properties.
    public struct LinkSpec: Sendable, Hashable {
        public var name: String
        public var kind: LinkKind
        public var ssid: String?
        public var meteredHint: Bool?
        public var addresses: [String]
        public var driver: String?

        public init(
            name: String, kind: LinkKind, ssid: String? = nil, meteredHint: Bool? = nil,
            addresses: [String] = [], driver: String? = nil
        ) {
            self.name = name
            self.kind = kind
            self.ssid = ssid
            self.meteredHint = meteredHint
            self.addresses = addresses
            self.driver = driver
        }
    }

    /// One instant of the timeline: which links go up or down, and which link is primary from then on.
    public struct Step: Sendable, Hashable {
        /// Time since the scenario started.
        public var at: Duration
        public var up: [String]
        public var down: [String]
        /// The primary uplink from this step on; nil keeps the previous primary while it stays up.
        public var primary: String?
        /// True when the step says `primary: none`: no link has a default route preference.
        public var clearsPrimary: Bool
        /// Free text shown in timelines (`the train leaves the station`).
        public var note: String?
        /// Line of the step in its file.
        public var line: Int
        /// Connectivity set from this step on, by link (until a later step sets it again).
        public var connectivity: [String: Connectivity] = [:]
        /// A captive portal's URL set from this step on, by link; "" clears it.
        public var portals: [String: String] = [:]
        /// The power supply from this step on: on battery or AC, the battery's charge, the power profile.
        public var onBattery: Bool?
        public var batteryPercent: Double?
        public var profile: String?

        public init(
            at: Duration, up: [String] = [], down: [String] = [], primary: String? = nil,
            clearsPrimary: Bool = false, note: String? = nil, line: Int = 0
        ) {
            self.at = at
            self.up = up
            self.down = down
            self.primary = primary
            self.clearsPrimary = clearsPrimary
            self.note = note
            self.line = line
        }
    }

    public var name: String
    public var description: String?
    public var links: [LinkSpec]
    public var steps: [Step]
    /// When the scenario ends; by default, at its last step.
    public var end: Duration

    public init(name: String, description: String? = nil, links: [LinkSpec], steps: [Step], end: Duration? = nil) {
        self.name = name
        self.description = description
        self.links = links
        self.steps = steps
        self.end = end ?? steps.last?.at ?? .zero
    }

    /// The snapshots the timeline produces, one per step, paired with the step's time.
    ///
    /// Every link that is up gets an IPv4 default route; the primary's has metric 100, the others
    /// 1000 plus their position, so `LinkSnapshot.primary` agrees with the file.
    public func timeline() -> [(at: Duration, snapshot: LinkSnapshot, note: String?)] {
        var upLinks: Set<String> = []
        var primary: String?
        var connectivity: [String: Connectivity] = [:]
        var portals: [String: String] = [:]
        var power = PowerFacts.unknown
        var result: [(Duration, LinkSnapshot, String?)] = []
        for (number, step) in steps.enumerated() {
            connectivity.merge(step.connectivity) { $1 }
            portals.merge(step.portals) { $1 }
            if let value = step.onBattery { power.onBattery = value }
            if let value = step.batteryPercent { power.batteryPercent = value }
            if let value = step.profile { power.profile = value }
            if power != .unknown { power.sources = ["scenario"] }
            upLinks.formUnion(step.up)
            upLinks.subtract(step.down)
            if step.clearsPrimary { primary = nil }
            if let next = step.primary { primary = next }
            if let current = primary, !upLinks.contains(current) { primary = nil }
            var snapshot = makeSnapshot(
                up: upLinks, primary: primary, sequence: UInt64(number + 1),
                at: step.at)
            snapshot.power = power
            for index in snapshot.links.indices where snapshot.links[index].isUsable {
                let name = snapshot.links[index].name
                if let state = connectivity[name] {
                    snapshot.links[index].connectivity = state
                    snapshot.links[index].connectivitySource = "scenario"
                }
                if let portal = portals[name], !portal.isEmpty { snapshot.links[index].portalURL = portal }
            }
            result.append((step.at, snapshot, step.note))
        }
        return result
    }

    func makeSnapshot(up: Set<String>, primary: String?, sequence: UInt64, at: Duration) -> LinkSnapshot {
        var links: [Link] = []
        var routes: [DefaultRoute] = []
        for (position, spec) in self.links.enumerated() {
            let index = position + 2  // 1 is conventionally lo
            let isUp = up.contains(spec.name)
            let v4 = spec.addresses.filter { !$0.contains(":") }
            let v6 = spec.addresses.filter { $0.contains(":") }
            links.append(
                Link(
                    index: index, name: spec.name, kind: spec.kind, kindSource: "scenario",
                    operstate: isUp ? "up" : "down", up: isUp, running: isUp, lowerUp: isUp, mtu: 1500,
                    mac: Self.mac(index), ipv4: isUp ? v4 : [], ipv6: isUp ? v6 : [], driver: spec.driver,
                    ssid: spec.ssid, meteredHint: spec.meteredHint, meteredHintSource: "scenario",
                    meteredHintExplicit: true))
            if isUp {
                let metric = spec.name == primary ? 100 : 1000 + position
                routes.append(DefaultRoute(family: .ipv4, linkIndex: index, link: spec.name, metric: metric))
            }
        }
        return LinkSnapshot(links: links, defaultRoutes: routes, sequence: sequence, timestamp: at.seconds)
    }

    static func mac(_ index: Int) -> String {
        let hex = String(index, radix: 16)
        return "02:00:00:00:00:" + (hex.count == 1 ? "0" + hex : hex)
    }
}
