/// What a link reaches, as NetworkManager's connectivity check (or a scenario) says: NetworkManager's
/// `NMConnectivityState`, by name.
public enum Connectivity: String, Sendable, Hashable, Codable, CaseIterable {
    /// The check has not run or cannot tell.
    case unknown
    /// No network at all.
    case none
    /// A captive portal answers instead of the internet: sign-in needed.
    case portal
    /// A network, but not the internet (a check that fails otherwise).
    case limited
    /// The internet answers.
    case full

    /// `NMConnectivityState` (0 unknown, 1 none, 2 portal, 3 limited, 4 full); nil for other numbers.
    public init?(networkManager value: UInt32) {
        switch value {
        case 0: self = .unknown
        case 1: self = .none
        case 2: self = .portal
        case 3: self = .limited
        case 4: self = .full
        default: return nil
        }
    }

    /// A primary link in this state is not used for downloads: a portal, a limited network, or none.
    public var blocksDownloads: Bool { self == .portal || self == .limited || self == .none }

    /// One state for a device from its IPv4 and IPv6 states: the better one, because traffic takes whichever
    /// family works (`full` over IPv4 and `none` over IPv6 is a working link); `unknown` when both are.
    public static func combined(_ a: Connectivity, _ b: Connectivity) -> Connectivity {
        let order: [Connectivity] = [.unknown, .none, .limited, .portal, .full]
        let rank = { (c: Connectivity) in order.firstIndex(of: c) ?? 0 }
        return rank(a) >= rank(b) ? a : b
    }
}
