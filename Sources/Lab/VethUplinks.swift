/// The link-monitor test topology: a namespace with veth links named `wlan0` and `wwan0`, each with an
/// address and a default route (wlan0's metric lower), their peers in a second namespace.
public struct VethUplinks: Sendable {
    public let device: Netns
    public let peer: Netns

    public static let wlanMetric = 100
    public static let wwanMetric = 600

    /// Builds the topology. On failure, whatever was created is removed before the error is thrown.
    public static func create(prefix: String = "mwtest") throws(LabError) -> VethUplinks {
        let device = try Netns.create(prefix: prefix + "d")
        let peer: Netns
        do {
            peer = try Netns.create(prefix: prefix + "p")
        } catch {
            device.delete()
            throw error
        }
        let uplinks = VethUplinks(device: device, peer: peer)
        do {
            try uplinks.configure()
        } catch {
            uplinks.delete()
            throw error
        }
        return uplinks
    }

    func configure() throws(LabError) {
        for (name, peerName, subnet, metric) in [("wlan0", "wlanp", "10.77.1", Self.wlanMetric),
                                                  ("wwan0", "wwanp", "10.77.2", Self.wwanMetric)] {
            try device.ip("link", "add", name, "type", "veth", "peer", "name", peerName, "netns", peer.name)
            try device.ip("addr", "add", "\(subnet).2/24", "dev", name)
            try peer.ip("addr", "add", "\(subnet).1/24", "dev", peerName)
            try peer.ip("link", "set", peerName, "up")
            try device.ip("link", "set", name, "up")
            try device.ip("route", "add", "default", "via", "\(subnet).1", "dev", name, "metric", "\(metric)")
        }
    }

    /// Removes both namespaces.
    public func delete() {
        device.delete()
        peer.delete()
    }
}
