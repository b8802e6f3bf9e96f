import Links

/// One entry of `networks:`: when a link matches every test of `match`, `set` applies to it.
/// Every matching rule applies, in order; later rules override `metered` and `roaming`, labels add up.
public struct NetworkRule: Sendable, Hashable {
    /// The tests of `match:`. An empty list means "any"; a non-empty one means "one of these".
    public struct Match: Sendable, Hashable {
        public var kinds: [LinkKind] = []
        public var names: [Glob] = []
        public var ssids: [Glob] = []
        public var drivers: [Glob] = []
        /// MAC globs, lowercase; a bare OUI `aa:bb:cc` is stored as `aa:bb:cc:*`.
        public var macs: [Glob] = []
        public var subnets: [Subnet] = []
        /// Matches the link's metered hint (NetworkManager / DHCP) when it has one.
        public var meteredHint: Bool?

        public init() {}

        /// Whether the link passes every test, and the first test it fails.
        public func evaluate(_ link: Link) -> (matched: Bool, failure: String?) {
            if !kinds.isEmpty, !kinds.contains(link.kind) {
                return (false, "kind is \(link.kind.rawValue), not \(kinds.map(\.rawValue).joined(separator: "|"))")
            }
            if !names.isEmpty, !names.contains(where: { $0.matches(link.name) }) {
                return (false, "name \(link.name) matches none of \(names.map(\.pattern).joined(separator: ", "))")
            }
            if !ssids.isEmpty {
                guard let ssid = link.ssid else { return (false, "the SSID is not known") }
                if !ssids.contains(where: { $0.matches(ssid) }) {
                    return (false, "SSID \(ssid) matches none of \(ssids.map(\.pattern).joined(separator: ", "))")
                }
            }
            if !drivers.isEmpty {
                guard let driver = link.driver else { return (false, "the driver is not known") }
                if !drivers.contains(where: { $0.matches(driver) }) {
                    return (false, "driver \(driver) matches none of \(drivers.map(\.pattern).joined(separator: ", "))")
                }
            }
            if !macs.isEmpty {
                guard let mac = link.mac?.lowercased() else { return (false, "the link has no MAC address") }
                if !macs.contains(where: { $0.matches(mac) }) {
                    return (false, "MAC \(mac) matches none of \(macs.map(\.pattern).joined(separator: ", "))")
                }
            }
            if !subnets.isEmpty {
                let hit = link.addresses.contains { address in subnets.contains { $0.contains(address) } }
                if !hit {
                    return (false, "no address in \(subnets.map(\.description).joined(separator: ", "))")
                }
            }
            if let meteredHint {
                guard let hint = link.meteredHint else { return (false, "the link has no metered hint") }
                if hint != meteredHint { return (false, "the metered hint is \(hint ? "yes" : "no")") }
            }
            return (true, nil)
        }
    }

    /// What `set:` gives a matching link.
    public struct Effect: Sendable, Hashable {
        public var metered: Bool?
        public var labels: [String] = []
        public var roaming: Bool?

        public init(metered: Bool? = nil, labels: [String] = [], roaming: Bool? = nil) {
            self.metered = metered
            self.labels = labels
            self.roaming = roaming
        }
    }

    /// The rule's name, for explanations and for drop-ins that replace it.
    public var name: String
    public var match: Match
    public var effect: Effect
    /// Where the rule was written, `file:line`.
    public var origin: String

    public init(name: String, match: Match, effect: Effect, origin: String = "") {
        self.name = name
        self.match = match
        self.effect = effect
        self.origin = origin
    }
}
