import Links

/// The kernel lab: a "device" namespace with one veth uplink per scenario link (`wlan0` fast, `wwan0`
/// slow through tbf) to an "internet" namespace, which holds the server address `10.77.100.1/32` on its
/// loopback, reachable over every uplink.
///
/// After `create`, every uplink is up with its address, its policy rule (`from 10.77.N.2 lookup
/// 100+N`) and its policy-table default route; the main table has no default route until a
/// `ScenarioDriver` applies the scenario's first step. `teardown()` removes both namespaces and with
/// them every link, route and qdisc.
public struct LabTopology: Sendable {
    public let device: Netns
    public let internet: Netns
    public let uplinks: [LabUplink]

    /// The address the internet namespace serves on (a /32 on its loopback).
    public static let serverAddress = "10.77.100.1"
    /// Default rate of fast links (wlan, ethernet): fast, but slow enough that a 64 MiB download still
    /// runs when the commute scenario drops Wi-Fi at 8 s.
    public static let defaultFastRate: Int64 = 48_000_000
    /// Default rate of slow links (wwan, ppp, tethering): a modest cellular link.
    public static let defaultSlowRate: Int64 = 3_000_000

    /// The uplinks for a scenario's links, in file order: slow kinds (wwan, ppp, bluetooth, tethering)
    /// get `slowRate`, the others `fastRate` (nil: unshaped).
    public static func uplinks(
        for scenario: Scenario, fastRate: Int64? = defaultFastRate,
        slowRate: Int64? = defaultSlowRate
    ) throws(LabError) -> [LabUplink] {
        guard !scenario.links.isEmpty, scenario.links.count <= 8 else {
            throw LabError(
                .scenarioUnsupported,
                "scenario \(scenario.name) has \(scenario.links.count) links; the lab builds 1 to 8")
        }
        var result: [LabUplink] = []
        for (position, spec) in scenario.links.enumerated() {
            let valid =
                !spec.name.isEmpty && spec.name.utf8.count <= 14 && spec.name != "lo"
                && spec.name.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." }
            guard valid else {
                throw LabError(
                    .scenarioUnsupported,
                    "link name \(spec.name) cannot be an interface name; use at most 14 letters and digits")
            }
            var uplink = LabUplink(name: spec.name, kind: spec.kind, number: position + 1, rateBitsPerSecond: nil)
            uplink.rateBitsPerSecond = uplink.isSlowKind ? slowRate : fastRate
            result.append(uplink)
        }
        return result
    }

    /// Builds the namespaces and links. On failure, whatever was created is removed before the error is
    /// thrown.
    public static func create(uplinks: [LabUplink], prefix: String = "mwlab") throws(LabError) -> LabTopology {
        try create(uplinks: uplinks, names: names(prefix: prefix))
    }

    /// The namespace names a topology with `prefix` gets: `PREFIX-dev-PID-R` and `PREFIX-net-PID-R`, known
    /// before they exist so that a `LabClaim` can record them first.
    public static func names(prefix: String = "mwlab") -> (device: String, internet: String) {
        (Netns.uniqueName(prefix: prefix + "-dev"), Netns.uniqueName(prefix: prefix + "-net"))
    }

    /// Builds the topology in namespaces named `names`; on failure, whatever was created is removed.
    public static func create(uplinks: [LabUplink], names: (device: String, internet: String)) throws(LabError)
        -> LabTopology
    {
        let device = try Netns.create(name: names.device)
        let internet: Netns
        do {
            internet = try Netns.create(name: names.internet)
        } catch {
            device.delete()
            throw error
        }
        let topology = LabTopology(device: device, internet: internet, uplinks: uplinks)
        do {
            try topology.configure()
        } catch {
            topology.teardown()
            throw error
        }
        return topology
    }

    func configure() throws(LabError) {
        try internet.ip("addr", "add", "\(Self.serverAddress)/32", "dev", "lo")
        for uplink in uplinks {
            try device.ip(
                "link", "add", uplink.name, "type", "veth", "peer", "name", uplink.peerName,
                "netns", internet.name)
            try device.ip("addr", "add", "\(uplink.deviceAddress)/24", "dev", uplink.name)
            try internet.ip("addr", "add", "\(uplink.gateway)/24", "dev", uplink.peerName)
            try internet.ip("link", "set", uplink.peerName, "up")
            try device.ip("link", "set", uplink.name, "up")
            try device.ip(
                "rule", "add", "from", uplink.deviceAddress, "lookup", "\(uplink.table)",
                "priority", "\(uplink.rulePriority)")
            try device.ip(RoutePlan.policyRoute(uplink))
            if let rate = uplink.rateBitsPerSecond {
                try internet.exec(["tc"] + TrafficShaper.tbf(interface: uplink.peerName, rateBitsPerSecond: rate))
                try device.exec(["tc"] + TrafficShaper.tbf(interface: uplink.name, rateBitsPerSecond: rate))
            }
        }
    }

    /// The uplink named `name`.
    public func uplink(named name: String) -> LabUplink? { uplinks.first { $0.name == name } }

    /// Removes both namespaces (and so every link, rule and qdisc). Never throws: safe in `defer`.
    public func teardown() {
        device.delete()
        internet.delete()
    }
}
