/// The numbers of `<linux/nl80211.h>` that Meterwise reads (a stable kernel ABI: values are never reused),
/// spelled here so the parsers stay pure and testable without the C header.
enum Nl80211 {
    static let familyName = "nl80211"
    /// The multicast groups whose events may change an interface's SSID or BSSID.
    static let groups = ["mlme", "config"]

    enum Command {
        static let getInterface: UInt8 = 5
        static let setInterface: UInt8 = 6
        static let newInterface: UInt8 = 7
        static let delInterface: UInt8 = 8
        static let getScan: UInt8 = 32
        static let newScanResults: UInt8 = 34
        static let joinIBSS: UInt8 = 43
        static let leaveIBSS: UInt8 = 44
        static let connect: UInt8 = 46
        static let roam: UInt8 = 47
        static let disconnect: UInt8 = 48
    }

    enum Attribute {
        static let ifindex: UInt16 = 3
        static let ifname: UInt16 = 4
        static let iftype: UInt16 = 5
        static let bss: UInt16 = 47
        static let ssid: UInt16 = 52
    }

    /// Inside `NL80211_ATTR_BSS`.
    enum BSSAttribute {
        static let bssid: UInt16 = 1
        static let status: UInt16 = 9
    }

    enum BSSStatus {
        static let authenticated: UInt32 = 0
        static let associated: UInt32 = 1
        static let ibssJoined: UInt32 = 2
    }

    /// `enum nl80211_iftype`.
    enum InterfaceType {
        static let adhoc: UInt32 = 1
        static let station: UInt32 = 2
        static let accessPoint: UInt32 = 3
        static let p2pClient: UInt32 = 8
    }

    /// The longest SSID 802.11 allows.
    static let maxSSIDLength = 32
}
