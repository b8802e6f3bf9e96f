import Links
import Policy
import Transfer

/// Which of a job's sources (docs/mirrors.md) it may use now, and which it prefers: the engine's answer to
/// `DownloadRequest.judgeSource`. An address is reached over the link whose subnet holds it (no router in
/// between), else over the link the kernel routes it to (`kernelRoute`: a static route, a VPN's, rules by
/// source) unless that is a default route and the transfer is bound to a link with a default route of its
/// own (the planner bound it to leave there), else over the default route: the bound link's when it has one,
/// else the primary's. A source
/// with an address reached over a link the job may not use is refused; under a rule's `prefer:`, the sources
/// it does not name stand by. Pure.
struct SourceJudge: Sendable {
    var snapshot: LinkSnapshot
    /// The links the job may use now: the uplinks its decision allows, and the LANs its rule's `via` admits.
    var allowed: Set<String>
    /// The rule that decided (nil: the policy's defaults), for the reasons.
    var rule: String?
    var prefer: SourcePreference?
    /// The link the transfer is bound to (its source address), when it is.
    var boundLink: String?
    /// The kernel's route lookup (`LinkMonitor.outgoingRoute`): the link packets to an address leave by, and
    /// whether a default route took them; nil when it cannot say (a simulation).
    var kernelRoute: (@Sendable (String) -> KernelRoute?)?

    /// Where packets to an address go: the link (nil: this machine's loopback, or no link reaches it), and
    /// whether it is on a local subnet.
    struct Route: Sendable, Equatable {
        var link: String?
        var local: Bool
    }

    /// The route to `address` (IPv4 or IPv6 text; an IPv6 zone, `fe80::1%eth0`, names its link; an IPv4
    /// address mapped into IPv6, `::ffff:10.0.0.1`, is that IPv4 address).
    func route(_ address: String) -> Route {
        let address = SourceAddresses.unmapped(address)
        if let percent = address.firstIndex(of: "%") {
            let zone = String(address[address.index(after: percent)...])
            let link = snapshot.link(named: zone)
            return Route(link: link?.kind == .loopback ? nil : zone, local: true)
        }
        for link in snapshot.links where link.up {
            for cidr in link.addresses {
                guard let subnet = Subnet(cidr), subnet.contains(address) else { continue }
                return Route(link: link.kind == .loopback ? nil : link.name, local: true)
            }
        }
        let bound = boundLink.flatMap { name in snapshot.defaultRoutes.contains { $0.link == name } ? name : nil }
        if let answer = kernelRoute?(address), let link = snapshot.links.first(where: { $0.index == answer.linkIndex }),
            !answer.isDefault || bound == nil
        {
            return Route(link: link.kind == .loopback ? nil : link.name, local: false)
        }
        return Route(link: bound ?? snapshot.primary?.name, local: false)
    }

    /// What the job does with the source at `host` (as its URL writes it) whose addresses are `addresses`
    /// (empty when the name did not resolve: then the source is used, and its first request says why not).
    func use(host: String, addresses: [String]) -> SourceUse {
        let routes = addresses.map(route)
        if let forbidden = routes.lazy.compactMap(\.link).first(where: { !allowed.contains($0) }) {
            let who = rule.map { "rule `\($0)`" } ?? "the policy's defaults"
            let may = allowed.isEmpty ? "no link" : allowed.sorted().joined(separator: ", ")
            return .refuse(
                "it is reached over \(forbidden), which \(who) does not let this job use (it may use \(may))")
        }
        switch prefer {
        case nil:
            return .use
        case .lan?:
            if !routes.isEmpty, routes.allSatisfy(\.local) { return .use }
            return .standby("not on a local subnet; the policy prefers sources on the LAN")
        case let preference?:
            if preference.listsHost(host) { return .use }
            return .standby("not one of the hosts the policy prefers (\(preference))")
        }
    }
}
