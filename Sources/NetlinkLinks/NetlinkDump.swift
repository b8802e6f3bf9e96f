import CNetlink
import Links

/// Reads of links, addresses and default routes over netlink.
///
/// Links and addresses are few: they are read whole (libnl caches) whenever one changes. Routes can be
/// a million (a full BGP table): they are never cached. A route dump is streamed and filtered while it is
/// parsed, keeping only the default routes (destination length 0, main table, unicast) — a header check
/// per route, memory independent of the table's size.
struct NetlinkDump {
    var readSysfs: Bool

    /// Links with their addresses.
    func readLinks(_ sock: OpaquePointer) throws(NetlinkError) -> [Link] {
        var linkCache: OpaquePointer?
        var addrCache: OpaquePointer?
        defer {
            if let linkCache { nl_cache_free(linkCache) }
            if let addrCache { nl_cache_free(addrCache) }
        }
        var result = rtnl_link_alloc_cache(sock, AF_UNSPEC, &linkCache)
        guard result == 0, let linkCache else { throw .libnl(.dump, "reading links", result) }
        result = rtnl_addr_alloc_cache(sock, &addrCache)
        guard result == 0, let addrCache else { throw .libnl(.dump, "reading addresses", result) }

        var v4: [Int: [String]] = [:]
        var v6: [Int: [String]] = [:]
        forEach(addrCache) { addr in
            let index = Int(rtnl_addr_get_ifindex(addr))
            guard let local = rtnl_addr_get_local(addr) else { return }
            let text = Self.string(local)
            if rtnl_addr_get_family(addr) == AF_INET6 {
                v6[index, default: []].append(text)
            } else {
                v4[index, default: []].append(text)
            }
        }
        var links: [Link] = []
        forEach(linkCache) { links.append(makeLink($0, v4: v4, v6: v6)) }
        return links
    }

    /// The default routes of both families, from a streamed, filtered dump on `sock` (a socket of its own:
    /// the dump replaces its receive callback).
    func readDefaultRoutes(_ sock: OpaquePointer) throws(NetlinkError) -> Set<RouteKey> {
        var capacity = 256
        while true {
            let sink = RouteSink(capacity: capacity)
            defer { sink.free() }
            let result = mw_dump_default_routes(sock, &sink.raw)
            guard result == 0 else { throw .libnl(.dump, "reading routes", result) }
            if sink.raw.full != 0 {
                guard capacity < 1 << 20 else { throw NetlinkError(.dump, "more than a million default routes") }
                capacity *= 4
                continue
            }
            return Set(
                sink.changes.compactMap { change in
                    if case .added(let route) = change { route } else { nil }
                })
        }
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
