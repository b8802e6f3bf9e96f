/// An address family of a route.
public enum AddressFamily: String, Sendable, Hashable, Codable {
    case ipv4
    case ipv6
}

/// A default route (`0.0.0.0/0` or `::/0`) in the main table.
public struct DefaultRoute: Sendable, Hashable, Codable {
    public var family: AddressFamily
    /// The outgoing link's index and name.
    public var linkIndex: Int
    public var link: String
    /// The route priority; lower wins.
    public var metric: Int
    /// The next hop, when the route has one.
    public var gateway: String?

    /// The JSON contract is snake_case (docs/api.md).
    enum CodingKeys: String, CodingKey {
        case family, link, metric, gateway
        case linkIndex = "link_index"
    }

    public init(family: AddressFamily, linkIndex: Int, link: String, metric: Int, gateway: String? = nil) {
        self.family = family
        self.linkIndex = linkIndex
        self.link = link
        self.metric = metric
        self.gateway = gateway
    }
}
