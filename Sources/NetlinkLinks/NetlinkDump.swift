import CNetlink
import Links

/// One full read of links, addresses and default routes (both families) over a netlink socket.
///
/// A dump, not an incremental cache: the kernel removes IPv4 routes of a link that goes down without
/// sending RTM_DELROUTE, and an overrun loses events, so after any burst of events the monitor reads
/// everything again. On a device with a handful of links a dump takes well under a millisecond.
struct NetlinkDump {
    var readSysfs: Bool

    func read(_ sock: OpaquePointer) throws(NetlinkError) -> (links: [Link], routes: [DefaultRoute]) {
        var linkCache: OpaquePointer?
        var addrCache: OpaquePointer?
        var routeCache: OpaquePointer?
        defer {
            if let linkCache { nl_cache_free(linkCache) }
            if let addrCache { nl_cache_free(addrCache) }
            if let routeCache { nl_cache_free(routeCache) }
        }
        var result = rtnl_link_alloc_cache(sock, AF_UNSPEC, &linkCache)
        guard result == 0, let linkCache else { throw .libnl(.dump, "reading links", result) }
        result = rtnl_addr_alloc_cache(sock, &addrCache)
        guard result == 0, let addrCache else { throw .libnl(.dump, "reading addresses", result) }
        result = rtnl_route_alloc_cache(sock, AF_UNSPEC, 0, &routeCache)
        guard result == 0, let routeCache else { throw .libnl(.dump, "reading routes", result) }

        var v4: [Int: [String]] = [:]
        var v6: [Int: [String]] = [:]
        forEach(addrCache) { object in
            let addr = object
            let index = Int(rtnl_addr_get_ifindex(addr))
            guard let local = rtnl_addr_get_local(addr) else { return }
            let text = Self.string(local)
            if rtnl_addr_get_family(addr) == AF_INET6 { v6[index, default: []].append(text) } else {
                v4[index, default: []].append(text)
            }
        }

        var links: [Link] = []
        var names: [Int: String] = [:]
        forEach(linkCache) { object in
            let link = object
            links.append(makeLink(link, v4: v4, v6: v6))
            names[links.last!.index] = links.last!.name
        }

        var routes: [DefaultRoute] = []
        forEach(routeCache) { object in
            let route = object
            guard rtnl_route_get_table(route) == UInt32(mw_rt_table_main()),
                rtnl_route_get_type(route) == UInt8(mw_rtn_unicast()),
                let dst = rtnl_route_get_dst(route), nl_addr_get_prefixlen(dst) == 0
            else { return }
            let family: AddressFamily = rtnl_route_get_family(route) == UInt8(AF_INET6) ? .ipv6 : .ipv4
            let index = Int(mw_route_first_ifindex(route))
            guard index > 0 else { return }
            let gateway = mw_route_first_gateway(route).map { Self.string($0) }
            routes.append(DefaultRoute(family: family, linkIndex: index, link: names[index] ?? "if\(index)",
                                       metric: Int(rtnl_route_get_priority(route)), gateway: gateway))
        }
        return (links, routes)
    }

    func makeLink(_ link: OpaquePointer, v4: [Int: [String]], v6: [Int: [String]]) -> Link {
        let index = Int(rtnl_link_get_ifindex(link))
        let name = rtnl_link_get_name(link).map { String(cString: $0) } ?? "if\(index)"
        let flags = rtnl_link_get_flags(link)
        var facts = LinkFacts(name: name)
        facts.arphrd = Int(rtnl_link_get_arptype(link))
        facts.rtnlType = rtnl_link_get_type(link).map { String(cString: $0) }
        if readSysfs { SysfsFacts.read(name: name, into: &facts) }
        let (kind, source) = LinkClassifier.classify(facts)
        var stateBuffer = [CChar](repeating: 0, count: 32)
        let operstate = String(cString: rtnl_link_operstate2str(rtnl_link_get_operstate(link), &stateBuffer, 32))
        var mac: String?
        if let address = rtnl_link_get_addr(link), nl_addr_get_len(address) > 0 {
            mac = Self.string(address).lowercased()
        }
        return Link(
            index: index, name: name, kind: kind, kindSource: source, operstate: operstate,
            up: flags & mw_iff_up() != 0, running: flags & mw_iff_running() != 0,
            lowerUp: flags & mw_iff_lower_up() != 0, mtu: Int(rtnl_link_get_mtu(link)), mac: mac,
            ipv4: (v4[index] ?? []).sorted(), ipv6: (v6[index] ?? []).sorted(), driver: facts.driver)
    }

    func forEach(_ cache: OpaquePointer, _ body: (OpaquePointer) -> Void) {
        var object = nl_cache_get_first(cache)
        while let current = object {
            body(current)
            object = nl_cache_get_next(current)
        }
    }

    static func string(_ address: OpaquePointer) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        return String(cString: nl_addr2str(address, &buffer, 128))
    }
}
