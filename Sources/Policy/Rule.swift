/// One entry of `rules:`: a name, a `when`, an action, and optionally `via` and a `budget`.
/// Rules are tried in order and the first that matches decides.
public struct Rule: Sendable, Hashable {
    public var name: String
    public var when: Condition
    public var action: Action
    /// Bytes per second when the action is `throttle`.
    public var rate: Int64?
    /// Which links a running job may use; nil means the default (see `effectiveVia`).
    public var via: Via?
    public var budget: Budget?
    /// `mode:`: how the jobs it matches transfer (nil: as the job or `defaults` say; docs/background.md).
    public var mode: TransferMode?
    /// `prefer:`: which of a job's sources take its work while they serve (nil: all alike).
    public var prefer: SourcePreference?
    /// Where the rule was written, `file:line`.
    public var origin: String

    public init(
        name: String, when: Condition = Condition(), action: Action, rate: Int64? = nil, via: Via? = nil,
        budget: Budget? = nil, origin: String = ""
    ) {
        self.name = name
        self.when = when
        self.action = action
        self.rate = rate
        self.via = via
        self.budget = budget
        self.origin = origin
    }

    /// True when the rule says in so many words that metered links are fine: `when: { metered: yes }`,
    /// `when: { allow_metered: yes }`, `via: any` or `via: <link>`. Only such a rule can run a job over
    /// a metered primary uplink.
    public var allowsMetered: Bool {
        if when.metered == true || when.allowMetered == true { return true }
        switch via {
        case .any, .link: return true
        case .unmetered, nil: return false
        }
    }

    /// `via` as written, or `any` for a rule that allows metered links and `unmetered` otherwise.
    public var effectiveVia: Via {
        via ?? (allowsMetered ? .any : .unmetered)
    }
}

/// How a transfer shares the link (docs/background.md): `background` gives way to other traffic
/// (receiver-side LEDBAT), `foreground` takes the link as any download does (BITS's FOREGROUND priority).
public enum TransferMode: String, Sendable, Hashable, Codable, CaseIterable {
    case background, foreground
}

/// What a job should do now.
public enum Action: String, Sendable, Hashable, Codable, CaseIterable {
    case run, pause, throttle
}

/// Which links a running job may use.
public enum Via: Sendable, Hashable, CustomStringConvertible {
    /// Only uplinks the policy classifies as unmetered.
    case unmetered
    /// Every usable uplink.
    case any
    /// Only this link.
    case link(String)

    public var description: String {
        switch self {
        case .unmetered: "unmetered"
        case .any: "any"
        case .link(let name): name
        }
    }
}
