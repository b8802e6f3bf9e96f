import Foundation
import Links

/// systemd-networkd's DHCP lease files (`/run/systemd/netif/leases/IFINDEX`, `KEY=value` lines). A lease
/// whose vendor-specific option (43) carries `ANDROID_METERED` — what an Android hotspot sends, and what
/// NetworkManager reads as guess-yes — is a metered hint for that link. Pure: the caller reads the file.
public enum NetworkdLease {
    public static let directory = "/run/systemd/netif/leases"
    static let androidMetered = Array("ANDROID_METERED".utf8)

    /// The hint a lease's text gives, or nil when it gives none: a metered guess from option 43, and the
    /// captive portal API's URL from option 114 (RFC 8910; networkd writes it as `CAPTIVE_PORTAL=`), which
    /// `PortalAPIHints` asks (RFC 8908).
    public static func hint(lease text: String) -> LinkHint? {
        var hint = LinkHint()
        for line in text.split(separator: "\n") {
            if line.hasPrefix("VENDOR_SPECIFIC=") {
                let hex = line.dropFirst("VENDOR_SPECIFIC=".count)
                guard let bytes = Self.bytes(hex: hex), contains(bytes, androidMetered) else { continue }
                hint.metered = true
                hint.meteredSource = "networkd: DHCP ANDROID_METERED"
            } else if line.hasPrefix("CAPTIVE_PORTAL=") {
                hint.portalAPI = portalAPI(line.dropFirst("CAPTIVE_PORTAL=".count))
            }
        }
        return hint == LinkHint() ? nil : hint
    }

    /// An RFC 8910 API URL as a lease carries it: https:// (RFC 8908 allows no other scheme), printable
    /// ASCII, at most 2048 bytes, a host and a valid port, no credentials (`PortalAPIAnswer.apiURL`); nil
    /// otherwise, and for RFC 8910's "no portal" URN.
    static func portalAPI(_ text: Substring) -> String? {
        PortalAPIAnswer.apiURL(text.trimmingCharacters(in: .whitespaces))
    }

    /// Hex digits (any case) as bytes; nil when malformed or over 255 bytes (an option's limit).
    static func bytes(hex: Substring) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0, digits.count <= 510 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    static func value(_ digit: UInt8) -> UInt8? {
        switch digit {
        case 0x30...0x39: digit - 0x30
        case 0x41...0x46: digit - 0x41 + 10
        case 0x61...0x66: digit - 0x61 + 10
        default: nil
        }
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { Array(haystack[$0..<($0 + needle.count)]) == needle }
    }
}
