/// What kind of device a network link is. The policy decides metered-ness from this (and more).
public enum LinkKind: String, Sendable, Hashable, Codable, CaseIterable {
    case wlan
    case wwan
    case ethernet
    case loopback
    case bridge
    case veth
    case tun
    case ppp
    case bluetooth
    case usbTether = "usb-tether"
    case other
}
