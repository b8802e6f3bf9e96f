/// What a source outside the kernel knows about one link (NetworkManager, a DHCP lease, ModemManager):
/// joined to the kernel's links by interface name. Every field is optional: nil means "this source
/// does not say".
public struct LinkHint: Sendable, Hashable {
    /// Metered or not, as the source says.
    public var metered: Bool?
    /// Where `metered` came from, e.g. `networkmanager: guess-yes`.
    public var meteredSource: String?
    /// Whether the source's verdict is an explicit setting (a user's `connection.metered yes`) rather than
    /// a guess; an explicit verdict wins over any guess from another source.
    public var explicit: Bool
    public var ssid: String?
    public var bssid: String?
    public var roaming: Bool?
    /// What the link reaches (NetworkManager's connectivity check).
    public var connectivity: Connectivity?
    /// Where `connectivity` came from.
    public var connectivitySource: String?
    /// A captive portal's sign-in page, for the user (RFC 8908's `user-portal-url`).
    public var portalURL: String?
    /// The captive portal API (RFC 8908) a DHCP lease names (option 114, RFC 8910): asked by
    /// `PortalAPIHints`, never shown as a page to sign in at.
    public var portalAPI: String?

    public init(
        metered: Bool? = nil, meteredSource: String? = nil, explicit: Bool = false, ssid: String? = nil,
        bssid: String? = nil, roaming: Bool? = nil
    ) {
        self.metered = metered
        self.meteredSource = meteredSource
        self.explicit = explicit
        self.ssid = ssid
        self.bssid = bssid
        self.roaming = roaming
    }

    /// This hint with the gaps filled from `other`: a metered verdict is taken from `other` when this one
    /// has none, or when `other`'s is explicit and this one's is a guess.
    public func filling(from other: LinkHint) -> LinkHint {
        var merged = self
        if other.metered != nil, metered == nil || (other.explicit && !explicit) {
            merged.metered = other.metered
            merged.meteredSource = other.meteredSource
            merged.explicit = other.explicit
        }
        merged.ssid = ssid ?? other.ssid
        merged.bssid = bssid ?? other.bssid
        merged.roaming = roaming ?? other.roaming
        if connectivity == nil || connectivity == .unknown, let theirs = other.connectivity, theirs != .unknown {
            merged.connectivity = theirs
            merged.connectivitySource = other.connectivitySource
        } else if connectivity == nil {
            merged.connectivity = other.connectivity
            merged.connectivitySource = other.connectivitySource
        }
        merged.portalURL = portalURL ?? other.portalURL
        merged.portalAPI = portalAPI ?? other.portalAPI
        return merged
    }
}

/// The hints of one source (or of all of them, merged) at one instant, by interface name.
public struct LinkHints: Sendable, Hashable {
    public var byName: [String: LinkHint]
    /// What a power source says (UPower, power-profiles-daemon); unknown from link sources.
    public var power = PowerFacts.unknown
    /// The sources that are running, for `meterwise links` ("no hint source runs" when empty).
    public var sources: [String]

    public init(byName: [String: LinkHint] = [:], sources: [String] = [], power: PowerFacts = .unknown) {
        self.byName = byName
        self.sources = sources
        self.power = power
    }

    public static let none = LinkHints()

    /// Every source's hints in one: for each link, the first source's hint filled from the later ones.
    public static func merging(_ all: [LinkHints]) -> LinkHints {
        var merged = LinkHints()
        for hints in all {
            merged.sources += hints.sources
            merged.power = merged.power.filling(from: hints.power)
            for (name, hint) in hints.byName {
                merged.byName[name] = merged.byName[name].map { $0.filling(from: hint) } ?? hint
            }
        }
        return merged
    }
}

extension LinkSnapshot {
    /// The snapshot with each link's SSID, BSSID, metered hint and roaming filled from `hints`. What the
    /// link already knew (a scenario's hint) wins unless the hint's verdict is explicit.
    public func applying(_ hints: LinkHints) -> LinkSnapshot {
        var copy = self
        copy.hintSources = hints.sources
        copy.power = power.filling(from: hints.power)
        for index in copy.links.indices {
            guard let hint = hints.byName[copy.links[index].name] else { continue }
            var link = copy.links[index]
            var own = LinkHint(
                metered: link.meteredHint, meteredSource: link.meteredHintSource, explicit: link.meteredHintExplicit,
                ssid: link.ssid, bssid: link.bssid, roaming: link.roaming)
            own.connectivity = link.connectivity
            own.connectivitySource = link.connectivitySource
            own.portalURL = link.portalURL
            let merged = own.filling(from: hint)
            link.meteredHint = merged.metered
            link.meteredHintSource = merged.meteredSource
            link.meteredHintExplicit = merged.metered != nil && merged.explicit
            link.ssid = merged.ssid
            link.bssid = merged.bssid
            link.roaming = merged.roaming
            link.connectivity = merged.connectivity
            link.connectivitySource = merged.connectivitySource
            link.portalURL = merged.portalURL
            copy.links[index] = link
        }
        return copy
    }
}

extension LinkHint {
    /// An SSID's bytes as every source shows them, so a `networks:` rule matches whichever source spoke: UTF-8
    /// when valid (and free of newlines and NULs), else lowercase hex, two digits a byte (SSIDs are arbitrary
    /// bytes); nil when empty or longer than 802.11's 32 bytes.
    public static func ssidText(_ bytes: [UInt8]) -> String? {
        guard !bytes.isEmpty, bytes.count <= 32 else { return nil }
        if let text = String(validating: bytes, as: UTF8.self), !text.contains(where: { $0.isNewline || $0 == "\0" }) {
            return text
        }
        return bytes.map(hexByte).joined()
    }

    /// A MAC address (a BSSID) as every source shows it: lowercase, colon-separated, `aa:bb:cc:dd:ee:ff`.
    public static func macText(_ bytes: [UInt8]) -> String {
        bytes.map(hexByte).joined(separator: ":")
    }

    private static func hexByte(_ byte: UInt8) -> String {
        let text = String(byte, radix: 16)
        return text.count == 1 ? "0" + text : text
    }
}
