/// One entry of the BSS (scan result) dump: `NL80211_CMD_NEW_SCAN_RESULTS` with the interface's index and a
/// nested `NL80211_ATTR_BSS`.
struct ScannedBSS: Sendable, Hashable {
    var interfaceIndex: UInt32
    var bssid: [UInt8]
    /// `NL80211_BSS_STATUS`; nil when the interface is neither authenticated nor associated with it.
    var status: UInt32?

    /// Reads a scan result's attributes: nil unless it has an ifindex and a nested BSS with a 6-byte BSSID.
    init?(_ attributes: NetlinkAttributes) {
        guard let index = attributes.u32(Nl80211.Attribute.ifindex),
            let bss = attributes.nested(Nl80211.Attribute.bss),
            let bssid = bss[Nl80211.BSSAttribute.bssid], bssid.count == 6
        else { return nil }
        interfaceIndex = index
        self.bssid = Array(bssid)
        status = bss.u32(Nl80211.BSSAttribute.status)
    }

    /// The interface is associated with this BSS (or has joined this IBSS): it is the link's BSSID.
    var isCurrent: Bool {
        status == Nl80211.BSSStatus.associated || status == Nl80211.BSSStatus.ibssJoined
    }
}
