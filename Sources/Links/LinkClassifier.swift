/// Classifies a link from its facts. One pure function, checked in a fixed order, so that the policy
/// can override its answer and users can see which fact decided it.
///
/// Order: sysfs DEVTYPE, wireless sysfs dirs, ARPHRD, USB tethering drivers, rtnl link type, name.
/// A name convention (`wlan0`, `wwan0`) beats a generic virtual type such as `veth`, so the lab's
/// veth pairs named like real radios are classified as those radios.
public enum LinkClassifier {
    /// USB network drivers used for phone tethering.
    public static let tetheringDrivers: Set<String> = ["rndis_host", "cdc_ether", "ipheth", "cdc_ncm"]

    /// Generic rtnl types that a name convention is allowed to override.
    static let genericTypes: Set<String> = ["veth", "dummy", "macvlan", "ipvlan", "vxlan"]

    public static func classify(_ facts: LinkFacts) -> (kind: LinkKind, source: String) {
        if facts.name == "lo" || facts.arphrd == ARPHRD.loopback {
            return (.loopback, facts.arphrd == ARPHRD.loopback ? "arphrd=loopback" : "name=lo")
        }
        if let devtype = facts.devtype {
            switch devtype {
            case "wlan": return (.wlan, "devtype=wlan")
            case "wwan": return (.wwan, "devtype=wwan")
            case "bluetooth": return (.bluetooth, "devtype=bluetooth")
            case "gadget": return (.usbTether, "devtype=gadget")
            default: break
            }
        }
        if facts.hasWirelessDirectory {
            return (.wlan, "sysfs=wireless")
        }
        if let arphrd = facts.arphrd {
            if arphrd == ARPHRD.ppp { return (.ppp, "arphrd=ppp") }
            if arphrd == ARPHRD.rawIP { return (.wwan, "arphrd=rawip") }
            if arphrd == ARPHRD.tunnelNone, (facts.rtnlType ?? "").isEmpty {
                // ARPHRD_NONE without a tun type: a raw-IP modem (qmi_wwan in raw-ip mode).
                return (.wwan, "arphrd=none")
            }
        }
        if let driver = facts.driver, tetheringDrivers.contains(driver) {
            return (.usbTether, "driver=\(driver)")
        }
        let byName = kindFromName(facts.name)
        if let type = facts.rtnlType, !type.isEmpty {
            if genericTypes.contains(type), let byName {
                return (byName, "name=\(facts.name) (over type=\(type))")
            }
            switch type {
            case "veth": return (.veth, "type=veth")
            case "bridge": return (.bridge, "type=bridge")
            case "tun", "tap": return (.tun, "type=\(type)")
            case "wireguard": return (.tun, "type=wireguard")
            case "ppp": return (.ppp, "type=ppp")
            default: break
            }
        }
        if let byName {
            return (byName, "name=\(facts.name)")
        }
        if facts.devtype == "bridge" { return (.bridge, "devtype=bridge") }
        if facts.arphrd == ARPHRD.tunnelNone { return (.tun, "arphrd=none") }
        if facts.arphrd == ARPHRD.ether, let driver = facts.driver {
            return (.ethernet, "arphrd=ether, driver=\(driver)")
        }
        if let type = facts.rtnlType, !type.isEmpty { return (.other, "type=\(type)") }
        return (.other, "no matching fact")
    }

    static func kindFromName(_ name: String) -> LinkKind? {
        func has(_ prefixes: [String]) -> Bool { prefixes.contains { name.hasPrefix($0) } }
        if has(["wlan", "wlp", "wlx", "wifi"]) { return .wlan }
        if has(["wwan", "wwp", "rmnet", "usb-modem", "mhi_hwip"]) { return .wwan }
        if has(["ppp"]) { return .ppp }
        if has(["eth", "en"]) { return .ethernet }
        if has(["br", "virbr"]) { return .bridge }
        if has(["tun", "tap", "wg"]) { return .tun }
        if has(["bnep"]) { return .bluetooth }
        return nil
    }
}
