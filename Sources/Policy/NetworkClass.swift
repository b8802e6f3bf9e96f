import Links

/// What the policy thinks of one link after the built-in guesses and every matching `networks:` rule:
/// metered or not, its labels, and whether it is roaming.
public struct NetworkClass: Sendable, Hashable, Codable {
    public var metered: Bool
    /// Labels from `networks:` rules (`home`, `hotspot`, ...), sorted, without duplicates.
    public var labels: [String]
    public var roaming: Bool
    /// Why, in order: the built-in guess first, then each `networks:` rule that matched.
    public var sources: [String]

    public init(metered: Bool, labels: [String] = [], roaming: Bool = false, sources: [String] = []) {
        self.metered = metered
        self.labels = labels
        self.roaming = roaming
        self.sources = sources
    }

    /// The kinds NetworkManager guesses to be metered when nothing else is known.
    public static let meteredKinds: Set<LinkKind> = [.wwan, .bluetooth, .ppp, .usbTether]

    /// The built-in verdict of `builtIn(for:)` and where it came from, in the words `meterwise links` prints
    /// (`networkmanager: guess-yes`, `guess: 172.20.10.4/28 is in 172.20.10.0/28, …`, `kind wwan`); the
    /// METERED column and `metered`/`metered_source` of `links --json` and `GET /v1/links`.
    public static func builtInVerdict(for link: Link) -> (metered: Bool, source: String) {
        if let hint = link.meteredHint, link.meteredHintExplicit { return (hint, link.meteredHintSource ?? "hint") }
        if let guess = PhoneHotspotGuess.reason(for: link) { return (true, guess) }
        if let hint = link.meteredHint { return (hint, link.meteredHintSource ?? "hint") }
        return (meteredKinds.contains(link.kind), "kind \(link.kind.rawValue)")
    }

    /// The built-in verdict, in this order: the user's explicit setting (NetworkManager's
    /// `connection.metered`, a scenario's `metered`); a phone hotspot's tell-tale signs (`PhoneHotspotGuess`);
    /// another source's guess (NetworkManager's DHCP `ANDROID_METERED`); the link's kind — wwan, bluetooth,
    /// ppp and usb-tether are metered, every other kind is not.
    public static func builtIn(for link: Link) -> NetworkClass {
        var network: NetworkClass
        let hintSays = { (hint: Bool) in
            "\(link.meteredHintSource ?? "a metered hint") says \(hint ? "metered" : "not metered")"
        }
        if let hint = link.meteredHint, link.meteredHintExplicit {
            network = NetworkClass(metered: hint, sources: [hintSays(hint)])
        } else if let guess = PhoneHotspotGuess.reason(for: link) {
            network = NetworkClass(metered: true, sources: [guess + ": metered"])
        } else if let hint = link.meteredHint {
            network = NetworkClass(metered: hint, sources: [hintSays(hint)])
        } else {
            let metered = meteredKinds.contains(link.kind)
            network = NetworkClass(
                metered: metered,
                sources: ["kind \(link.kind.rawValue) is \(metered ? "metered" : "not metered") by default"])
        }
        if link.roaming == true {
            network.roaming = true
            network.sources.append("the modem says it is roaming")
        }
        return network
    }
}
