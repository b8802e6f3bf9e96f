/// The raw facts a monitor gathers about one link (from rtnetlink and sysfs) before classifying it.
///
/// Every field is optional because every source can be missing: a link inside a network namespace may
/// have no sysfs device, a virtual link has no driver, and so on.
public struct LinkFacts: Sendable, Hashable {
    /// Interface name, e.g. `wlan0`.
    public var name: String
    /// `DEVTYPE=` from `/sys/class/net/NAME/uevent` (`wlan`, `wwan`, `bluetooth`, `gadget`, `bridge`, ...).
    public var devtype: String?
    /// Whether `/sys/class/net/NAME/wireless` or `/sys/class/net/NAME/phy80211` exists.
    public var hasWirelessDirectory: Bool
    /// The ARPHRD_* hardware type (`/sys/class/net/NAME/type`, or `ifi_type`).
    public var arphrd: Int?
    /// The kernel driver bound to the device (basename of `device/driver`), e.g. `rndis_host`.
    public var driver: String?
    /// The rtnetlink link type (IFLA_INFO_KIND), e.g. `veth`, `bridge`, `tun`.
    public var rtnlType: String?

    public init(
        name: String, devtype: String? = nil, hasWirelessDirectory: Bool = false, arphrd: Int? = nil,
        driver: String? = nil, rtnlType: String? = nil
    ) {
        self.name = name
        self.devtype = devtype
        self.hasWirelessDirectory = hasWirelessDirectory
        self.arphrd = arphrd
        self.driver = driver
        self.rtnlType = rtnlType
    }
}

/// ARPHRD_* values from `<linux/if_arp.h>` that classification looks at.
public enum ARPHRD {
    public static let ether = 1
    public static let ppp = 512
    public static let tunnelNone = 0xFFFE  // ARPHRD_NONE: raw-IP devices (tun, some modems)
    public static let rawIP = 519  // ARPHRD_RAWIP: qmi_wwan / rmnet raw-IP modems
    public static let loopback = 772
}
