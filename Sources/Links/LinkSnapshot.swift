/// The state of every link and default route at one instant, with the primary uplink worked out.
public struct LinkSnapshot: Sendable, Hashable, Codable {
    public var links: [Link]
    public var defaultRoutes: [DefaultRoute]
    /// Increases by one with every snapshot a monitor delivers.
    public var sequence: UInt64
    /// Seconds since the monitor started (its clock), for ordering and display.
    public var timestamp: Double
    /// The sources of hints beyond the kernel that are running (`networkmanager`), empty when none runs.
    public var hintSources: [String] = []
    /// The machine's power supply, when a source says (`PowerFacts`); not a link fact, but decided on the same
    /// way: a change gives a new snapshot.
    public var power = PowerFacts.unknown

    /// The JSON contract is snake_case (docs/api.md).
    enum CodingKeys: String, CodingKey {
        case links, sequence, timestamp
        case defaultRoutes = "default_routes", hintSources = "hint_sources", power
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            links: try c.decode([Link].self, forKey: .links),
            defaultRoutes: try c.decode([DefaultRoute].self, forKey: .defaultRoutes),
            sequence: try c.decode(UInt64.self, forKey: .sequence),
            timestamp: try c.decode(Double.self, forKey: .timestamp))
        hintSources = try c.decodeIfPresent([String].self, forKey: .hintSources) ?? []
        power = try c.decodeIfPresent(PowerFacts.self, forKey: .power) ?? .unknown
    }

    public init(links: [Link], defaultRoutes: [DefaultRoute], sequence: UInt64 = 0, timestamp: Double = 0) {
        self.links = links.sorted { $0.index < $1.index }
        self.defaultRoutes = defaultRoutes.sorted {
            ($0.family == .ipv4 ? 0 : 1, $0.metric, $0.linkIndex) < (
                $1.family == .ipv4 ? 0 : 1, $1.metric, $1.linkIndex
            )
        }
        self.sequence = sequence
        self.timestamp = timestamp
    }

    /// An empty snapshot: no links, no routes.
    public static let empty = LinkSnapshot(links: [], defaultRoutes: [])

    public func link(named name: String) -> Link? { links.first { $0.name == name } }
    public func link(index: Int) -> Link? { links.first { $0.index == index } }

    /// The primary uplink: the link of the lowest-metric IPv4 default route whose link is up and running;
    /// when no IPv4 route qualifies, the same over IPv6. A route whose link went down but which the kernel
    /// still lists never makes its link primary.
    public var primary: Link? {
        for family in [AddressFamily.ipv4, .ipv6] {
            let candidates =
                defaultRoutes
                .filter { $0.family == family }
                .compactMap { route -> (DefaultRoute, Link)? in
                    guard let link = link(index: route.linkIndex), link.isUsable else { return nil }
                    return (route, link)
                }
                .min { ($0.0.metric, $0.0.linkIndex) < ($1.0.metric, $1.0.linkIndex) }
            if let candidates { return candidates.1 }
        }
        return nil
    }

    /// Links that currently have a usable default route (any family): the uplinks traffic could take.
    public var uplinks: [Link] {
        let indices = Set(defaultRoutes.map(\.linkIndex))
        return links.filter { indices.contains($0.index) && $0.isUsable }
    }

    /// True when `other` has the same links (connectivity and portal URLs aside), the same default routes
    /// (their metrics aside) and the same primary: what changes when a captive portal is signed into, as
    /// NetworkManager lowers a route's metric once its connectivity check passes.
    public func keepsLinksAndPrimary(of other: LinkSnapshot) -> Bool {
        func plain(_ links: [Link]) -> [Link] {
            links.map {
                var link = $0
                link.connectivity = nil
                link.connectivitySource = nil
                link.portalURL = nil
                return link
            }
        }
        func routes(_ snapshot: LinkSnapshot) -> Set<String> {
            Set(snapshot.defaultRoutes.map { "\($0.family) \($0.link) \($0.gateway ?? "-")" })
        }
        return primary?.name == other.primary?.name && routes(self) == routes(other)
            && plain(links) == plain(other.links)
    }

    /// True when the content (links, routes) equals another snapshot's, ignoring sequence and time.
    public func sameState(as other: LinkSnapshot) -> Bool {
        links == other.links && defaultRoutes == other.defaultRoutes
    }
}
