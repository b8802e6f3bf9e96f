import Links

/// What nl80211 says about the wireless interfaces at one instant, and the hints it gives. Pure: the
/// reader fills it from the kernel's answers, tests from recorded bytes.
struct WirelessState: Sendable, Hashable {
    var interfaces: [WirelessInterface]
    /// The current BSSID (associated, or the IBSS joined) by interface index.
    var bssids: [UInt32: [UInt8]]

    init(interfaces: [WirelessInterface] = [], bssids: [UInt32: [UInt8]] = [:]) {
        self.interfaces = interfaces
        self.bssids = bssids
    }

    /// The state from the two dumps' messages: `GET_INTERFACE`'s and `GET_SCAN`'s (of every interface).
    /// Messages that do not parse, or are of another command, are left out.
    init(interfaceMessages: [GenericNetlinkMessage], scanMessages: [GenericNetlinkMessage]) {
        self.init()
        for message in interfaceMessages where message.command == Nl80211.Command.newInterface {
            if let interface = WirelessInterface(message.attributes) { interfaces.append(interface) }
        }
        for message in scanMessages where message.command == Nl80211.Command.newScanResults {
            if let bss = ScannedBSS(message.attributes), bss.isCurrent { bssids[bss.interfaceIndex] = bss.bssid }
        }
    }

    /// The interfaces whose BSS list is worth a dump: the clients (an AP's scan results say nothing here).
    var clientIndexes: [UInt32] { interfaces.filter(\.isClient).map(\.index) }

    /// The hints, by interface name: SSID and BSSID of every client interface that has either.
    var hints: LinkHints {
        var byName: [String: LinkHint] = [:]
        for interface in interfaces where interface.isClient {
            let hint = LinkHint(
                ssid: interface.ssid.flatMap(LinkHint.ssidText), bssid: bssids[interface.index].map(LinkHint.macText))
            if hint != LinkHint() { byName[interface.name] = hint }
        }
        return LinkHints(byName: byName, sources: [Nl80211.familyName])
    }

    /// Whether an event of `command` may change an SSID or BSSID: then the interfaces and BSSes are read
    /// again. Other mlme and config events (frames, channel switches, new wiphys) change neither.
    static func changes(after command: UInt8) -> Bool {
        [
            Nl80211.Command.connect, Nl80211.Command.roam, Nl80211.Command.disconnect,
            Nl80211.Command.newInterface, Nl80211.Command.delInterface, Nl80211.Command.setInterface,
            Nl80211.Command.joinIBSS, Nl80211.Command.leaveIBSS,
        ].contains(command)
    }
}
