import Links

/// Built-in guesses for phone hotspots that nobody marks metered, each with its reason. A user's explicit
/// setting (NetworkManager's `connection.metered`) wins over them; a `networks:` rule can override them.
public enum PhoneHotspotGuess {
    /// iOS gives hotspot clients addresses in 172.20.10.0/28.
    static let iPhoneSubnet: (base: UInt32, bits: Int) = (0xAC14_0A00, 28)

    /// Why `link` looks like a phone hotspot, or nil when it does not.
    public static func reason(for link: Link) -> String? {
        guard link.kind == .wlan else { return nil }
        if let address = link.ipv4.first(where: { inIPhoneSubnet($0) }) {
            return "guess: \(address) is in 172.20.10.0/28, an iPhone hotspot's subnet"
        }
        if let bssid = link.bssid, let first = firstOctet(bssid), first & 0x02 != 0 {
            return "guess: BSSID \(bssid) is locally administered, as a phone hotspot's is"
        }
        return nil
    }

    /// Whether `cidr` (`a.b.c.d/n`) is an address in 172.20.10.0/28.
    static func inIPhoneSubnet(_ cidr: String) -> Bool {
        let address = cidr.split(separator: "/").first ?? ""
        let parts = address.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return false }
        var value: UInt32 = 0
        for part in parts {
            guard part.count <= 3, let byte = UInt8(part) else { return false }
            value = value << 8 | UInt32(byte)
        }
        let mask = UInt32.max << UInt32(32 - iPhoneSubnet.bits)
        return value & mask == iPhoneSubnet.base
    }

    static func firstOctet(_ mac: String) -> UInt8? {
        let text = mac.split(separator: ":").first ?? ""
        guard text.count == 2 else { return nil }
        return UInt8(text, radix: 16)
    }
}
