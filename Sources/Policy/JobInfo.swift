/// What the policy needs to know about a download job. A plain value the engine fills in.
public struct JobInfo: Sendable, Hashable, Codable {
    public var id: String
    /// Total size in bytes, when known (a server may not say).
    public var size: Int64?
    /// Higher is more urgent; 0 is normal.
    public var priority: Int
    public var tags: [String]
    /// The job's own permission to use metered links (Android's allowedOverMetered); tested by
    /// `when: { allow_metered: yes }`.
    public var allowMetered: Bool
    /// The job's permission to use roaming links; nil when the job does not say (counts as no).
    public var allowRoaming: Bool?
    /// Whose job (or question) this is: per-user budgets count against this user's share; nil is root's.
    public var owner: UInt32?

    /// The JSON contract is snake_case (docs/api.md).
    enum CodingKeys: String, CodingKey {
        case id, size, priority, tags
        case allowMetered = "allow_metered", allowRoaming = "allow_roaming", owner
    }

    public init(
        id: String = "", size: Int64? = nil, priority: Int = 0, tags: [String] = [], allowMetered: Bool = false,
        allowRoaming: Bool? = nil, owner: UInt32? = nil
    ) {
        self.owner = owner
        self.id = id
        self.size = size
        self.priority = priority
        self.tags = tags
        self.allowMetered = allowMetered
        self.allowRoaming = allowRoaming
    }
}
