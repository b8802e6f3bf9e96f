import Links

/// One uplink of the lab: a veth pair between the device namespace (`name`, e.g. `wlan0`) and the
/// internet namespace (`peerName`), on its own /24 and its own policy-routing table.
///
/// The `number`th uplink (from 1) uses `10.77.<number>.0/24`: the device end is `.2`, the internet end
/// (the gateway) `.1`, and table `100 + number` holds a default route through it, selected by the rule
/// `from <device address>`, so a socket bound to the device address leaves through this link whatever
/// the primary uplink is.
public struct LabUplink: Sendable, Hashable {
    public var name: String
    public var kind: LinkKind
    public var number: Int
    /// The rate the internet side sends toward the device (and the device sends back) in bit/s;
    /// nil leaves the link unshaped.
    public var rateBitsPerSecond: Int64?

    public init(name: String, kind: LinkKind, number: Int, rateBitsPerSecond: Int64?) {
        self.name = name
        self.kind = kind
        self.number = number
        self.rateBitsPerSecond = rateBitsPerSecond
    }

    /// The device end's address, e.g. `10.77.1.2`.
    public var deviceAddress: String { "10.77.\(number).2" }
    /// The internet end's address and the device's gateway over this link, e.g. `10.77.1.1`.
    public var gateway: String { "10.77.\(number).1" }
    /// The policy-routing table for traffic from `deviceAddress`.
    public var table: Int { 100 + number }
    /// The rule priority of `from deviceAddress lookup table`.
    public var rulePriority: Int { 1000 + table }
    /// The veth's name in the internet namespace (at most 15 bytes, like every interface name).
    public var peerName: String { String((name + "p").suffix(15)) }

    /// Whether the kind is a metered one by convention (shaped slow in the lab).
    public var isSlowKind: Bool { [.wwan, .ppp, .bluetooth, .usbTether].contains(kind) }
}
