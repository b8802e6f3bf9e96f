import Links

/// What the lab's device namespace should look like at one instant: which uplinks are up, and the
/// metric of each one's default route in the main table (the lowest is the primary uplink).
public struct RouteState: Sendable, Hashable {
    public var up: Set<String>
    /// Main-table default route metric per link name; a link that is up without an entry has no
    /// default route.
    public var metrics: [String: Int]

    public init(up: Set<String>, metrics: [String: Int]) {
        self.up = up
        self.metrics = metrics
    }

    /// The state right after `LabTopology` is built: every uplink up with its policy table filled, and
    /// no default route in the main table yet.
    public static func initial(_ uplinks: [LabUplink]) -> RouteState {
        RouteState(up: Set(uplinks.map(\.name)), metrics: [:])
    }

    /// The state a scenario snapshot describes (IPv4 default routes; `Scenario.timeline()` gives the
    /// primary metric 100 and the others 1000 plus their position, as the lab then does in the kernel).
    public init(snapshot: LinkSnapshot) {
        up = Set(snapshot.links.filter(\.up).map(\.name))
        var metrics: [String: Int] = [:]
        for route in snapshot.defaultRoutes where route.family == .ipv4 {
            metrics[route.link] = route.metric
        }
        self.metrics = metrics
    }

    /// The primary uplink: the up link with the lowest metric (ties: the name), or nil.
    public var primary: String? {
        metrics.filter { up.contains($0.key) }.min { ($0.value, $0.key) < ($1.value, $1.key) }?.key
    }
}
