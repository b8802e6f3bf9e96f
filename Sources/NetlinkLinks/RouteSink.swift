import CNetlink
import Links

/// One default route as the monitor keeps it between events: what identifies it in the kernel's table.
struct RouteKey: Hashable {
    var family: AddressFamily
    var linkIndex: Int
    var metric: Int
    var gateway: String?

    init(_ raw: mw_default_route) {
        family = raw.family == AF_INET6 ? .ipv6 : .ipv4
        linkIndex = Int(raw.ifindex)
        metric = Int(raw.metric)
        var copy = raw.gateway
        let text = withUnsafeBytes(of: &copy) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
        gateway = text.isEmpty ? nil : text
    }

    /// The route for a snapshot, with its link's name.
    func defaultRoute(names: [Int: String]) -> DefaultRoute {
        DefaultRoute(
            family: family, linkIndex: linkIndex, link: names[linkIndex] ?? "if\(linkIndex)", metric: metric,
            gateway: gateway)
    }
}

/// The C side's `mw_route_sink` with Swift-owned storage: default-route changes in the order they came.
final class RouteSink {
    var raw: mw_route_sink
    private let routes: UnsafeMutablePointer<mw_default_route>
    private let added: UnsafeMutablePointer<UInt8>

    init(capacity: Int) {
        routes = .allocate(capacity: capacity)
        added = .allocate(capacity: capacity)
        raw = mw_route_sink(
            routes: routes, added: added, count: 0, capacity: Int32(capacity), full: 0, links_changed: 0, messages: 0)
    }

    func free() {
        routes.deallocate()
        added.deallocate()
    }

    /// Empties the sink for the next burst.
    func reset() {
        raw.count = 0
        raw.full = 0
        raw.links_changed = 0
        raw.messages = 0
    }

    /// One change, in the order the kernel reported it.
    enum Change {
        case added(RouteKey)
        case removed(RouteKey)
        /// The link went down or away: the kernel dropped its routes without a word.
        case linkDown(Int)
    }

    var changes: [Change] {
        (0..<Int(raw.count)).map { index in
            switch Int(added[index]) {
            case Int(MW_LINK_DOWN): .linkDown(Int(routes[index].ifindex))
            case Int(MW_ROUTE_ADDED): .added(RouteKey(routes[index]))
            default: .removed(RouteKey(routes[index]))
            }
        }
    }
}
