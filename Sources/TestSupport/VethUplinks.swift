import Lab
import Links

/// The link-monitor test and bench topology: the lab's namespaces with unshaped veth uplinks `wlan0`
/// (10.77.1.2/24) and `wwan0` (10.77.2.2/24), each with a default route in the main table, wlan0's metric
/// lower.
public struct VethUplinks: Sendable {
    public let topology: LabTopology
    /// The namespace holding wlan0 and wwan0.
    public var device: Netns { topology.device }
    /// The namespace at the far end of the veths.
    public var peer: Netns { topology.internet }

    public static let wlanMetric = 100
    public static let wwanMetric = 600

    /// Builds the topology. On failure, whatever was created is removed before the error is thrown.
    public static func create(prefix: String = "mwtest") throws(LabError) -> VethUplinks {
        let uplinks = [
            LabUplink(name: "wlan0", kind: .wlan, number: 1, rateBitsPerSecond: nil),
            LabUplink(name: "wwan0", kind: .wwan, number: 2, rateBitsPerSecond: nil),
        ]
        let topology = try LabTopology.create(uplinks: uplinks, prefix: prefix)
        do {
            for (uplink, metric) in zip(uplinks, [wlanMetric, wwanMetric]) {
                try topology.device.ip(
                    "route", "add", "default", "via", uplink.gateway, "dev", uplink.name, "metric", "\(metric)")
            }
        } catch {
            topology.teardown()
            throw error
        }
        return VethUplinks(topology: topology)
    }

    /// Removes both namespaces.
    public func delete() { topology.teardown() }
}
