/// One wireless interface as `NL80211_CMD_NEW_INTERFACE` (the answer to `GET_INTERFACE`) describes it.
struct WirelessInterface: Sendable, Hashable {
    var index: UInt32
    var name: String
    /// `enum nl80211_iftype`: station, access point, ...
    var type: UInt32
    /// The SSID's bytes (1 to 32 of them, any values); nil when not connected.
    var ssid: [UInt8]?

    /// Reads a `NEW_INTERFACE` message's attributes: nil unless it has an ifindex, a name and a type. An
    /// SSID attribute that is empty or longer than 32 bytes is ignored (no SSID), not trusted.
    init?(_ attributes: NetlinkAttributes) {
        guard let index = attributes.u32(Nl80211.Attribute.ifindex), index > 0,
            let name = attributes.string(Nl80211.Attribute.ifname), name.utf8.count < 16,
            let type = attributes.u32(Nl80211.Attribute.iftype)
        else { return nil }
        self.init(index: index, name: name, type: type)
        if let ssid = attributes[Nl80211.Attribute.ssid], (1...Nl80211.maxSSIDLength).contains(ssid.count) {
            self.ssid = Array(ssid)
        }
    }

    init(index: UInt32, name: String, type: UInt32, ssid: [UInt8]? = nil) {
        self.index = index
        self.name = name
        self.type = type
        self.ssid = ssid
    }

    /// A client of someone else's network (station, P2P client, IBSS member): its SSID and BSSID say which
    /// network this link uses. An access point's SSID is the one it serves — not where this device's traffic
    /// goes — so an AP, P2P GO, mesh or monitor interface gives no hint.
    var isClient: Bool {
        [Nl80211.InterfaceType.station, Nl80211.InterfaceType.p2pClient, Nl80211.InterfaceType.adhoc].contains(type)
    }
}
