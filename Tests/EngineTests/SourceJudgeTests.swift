import Links
import Policy
import TestSupport
import Testing
import Transfer

@testable import Engine

/// `SourceJudge`: the link each source is reached over (its subnet's, else the default route's) decides
/// whether a job may use it, and `prefer:` which sources stand by.
@Suite struct SourceJudgeTests {
    /// wlan0 (10.77.1.2/24) primary and wwan0 (10.77.2.2/24) with default routes; eth0 (10.77.3.2/24) up
    /// without one; lo.
    static var snapshot: LinkSnapshot {
        var s = TestSnapshots.radios(up: ["wlan0", "wwan0"], primary: "wlan0")
        if let i = s.links.firstIndex(where: { $0.name == "eth0" }) {
            s.links[i].up = true
            s.links[i].running = true
            s.links[i].ipv4 = ["10.77.3.2/24"]
        }
        s.links.append(
            Link(
                index: 1, name: "lo", kind: .loopback, kindSource: "test", up: true, running: true,
                ipv4: ["127.0.0.1/8"], ipv6: ["::1/128"]))
        return s
    }

    func judge(allowed: Set<String>, prefer: SourcePreference? = nil, bound: String? = nil) -> SourceJudge {
        SourceJudge(snapshot: Self.snapshot, allowed: allowed, rule: "home", prefer: prefer, boundLink: bound)
    }

    @Test func aSourceIsReachedOverItsSubnetsLinkElseTheDefaultRoute() {
        let j = judge(allowed: ["wlan0"])
        #expect(j.route("10.77.2.9") == .init(link: "wwan0", local: true))
        #expect(j.route("10.77.3.40") == .init(link: "eth0", local: true))
        #expect(j.route("127.0.0.1") == .init(link: nil, local: true))
        #expect(j.route("::1") == .init(link: nil, local: true))
        #expect(j.route("fe80::1%wwan0") == .init(link: "wwan0", local: true))
        // An IPv4 address mapped into IPv6 is that IPv4 address, however it is written.
        #expect(j.route("::ffff:10.77.2.9") == .init(link: "wwan0", local: true))
        #expect(j.route("::ffff:a4d:209") == .init(link: "wwan0", local: true))
        #expect(j.route("0:0:0:0:0:ffff:10.77.2.9") == .init(link: "wwan0", local: true))
        #expect(SourceAddresses.unmapped("::1") == "::1")
        #expect(SourceAddresses.unmapped("2001:db8::1") == "2001:db8::1")
        #expect(j.route("203.0.113.5") == .init(link: "wlan0", local: false))
        // Bound to a link with its own default route: off-subnet traffic leaves there.
        #expect(judge(allowed: ["wwan0"], bound: "wwan0").route("203.0.113.5") == .init(link: "wwan0", local: false))
        // Bound to a link without one: still the primary's route.
        #expect(judge(allowed: ["eth0"], bound: "eth0").route("203.0.113.5") == .init(link: "wlan0", local: false))
    }

    /// Off its links' subnets, a source is reached over the link the kernel routes it to (a static route, a VPN's,
    /// rules by source), which may not be the primary's: a mirror behind a route over wwan0 is refused to a job
    /// that may use wlan0 only.
    @Test func theKernelsRouteDecidesOffTheSubnets() throws {
        let wwan0 = try #require(Self.snapshot.link(named: "wwan0")).index
        let wlan0 = try #require(Self.snapshot.link(named: "wlan0")).index
        var j = judge(allowed: ["wlan0"])
        j.kernelRoute = {
            $0.hasPrefix("10.99.")
                ? KernelRoute(linkIndex: wwan0, isDefault: false) : KernelRoute(linkIndex: wlan0, isDefault: true)
        }
        #expect(j.route("10.99.4.4") == .init(link: "wwan0", local: false))
        #expect(j.route("203.0.113.5") == .init(link: "wlan0", local: false))
        #expect(j.route("10.77.3.40") == .init(link: "eth0", local: true))
        guard case .refuse(let why) = j.use(host: "vpn-mirror", addresses: ["10.99.4.4"]) else {
            Issue.record("a source routed over wwan0 was not refused")
            return
        }
        #expect(why.contains("reached over wwan0"))
        // Bound to a link with a default route of its own (the planner binds the transfer to leave there): a
        // default route's answer does not move it; a route to the address's own network does.
        var bound = judge(allowed: ["wwan0"], bound: "wwan0")
        bound.kernelRoute = j.kernelRoute
        #expect(bound.route("203.0.113.5") == .init(link: "wwan0", local: false))
        bound.kernelRoute = { _ in KernelRoute(linkIndex: wlan0, isDefault: false) }
        #expect(bound.route("203.0.113.5") == .init(link: "wlan0", local: false))
        // An index the snapshot does not know yet: the default route, as without the kernel's answer.
        j.kernelRoute = { _ in KernelRoute(linkIndex: 9999, isDefault: false) }
        #expect(j.route("10.99.4.4") == .init(link: "wlan0", local: false))
    }

    @Test func aSourceOverALinkTheJobMayNotUseIsRefused() {
        let j = judge(allowed: ["wlan0"])
        #expect(j.use(host: "mirror.example", addresses: ["203.0.113.5"]) == .use)
        #expect(j.use(host: "localhost", addresses: ["127.0.0.1", "::1"]) == .use)
        guard case .refuse(let why) = j.use(host: "cell-cache", addresses: ["10.77.2.9"]) else {
            Issue.record("not refused")
            return
        }
        #expect(why.contains("reached over wwan0") && why.contains("rule `home`") && why.contains("may use wlan0"))
        // One address over a forbidden link is enough: the connection may pick it.
        if case .refuse = j.use(host: "dual", addresses: ["203.0.113.5", "10.77.3.40"]) {
        } else {
            Issue.record("a host with an address on eth0 (not allowed) was not refused")
        }
        #expect(judge(allowed: ["wlan0", "eth0"]).use(host: "dual", addresses: ["203.0.113.5", "10.77.3.40"]) == .use)
        // A name that did not resolve is used: its first request says why not.
        #expect(j.use(host: "nowhere.invalid", addresses: []) == .use)
    }

    @Test func preferredSourcesTakeTheWorkAndTheOthersStandBy() throws {
        let lan = judge(allowed: ["wlan0", "eth0"], prefer: .lan)
        #expect(lan.use(host: "cache", addresses: ["10.77.3.40"]) == .use)
        #expect(lan.use(host: "localhost", addresses: ["127.0.0.1"]) == .use)
        guard case .standby(let why) = lan.use(host: "mirror.example", addresses: ["203.0.113.5"]) else {
            Issue.record("not standing by")
            return
        }
        #expect(why.contains("LAN"))
        // Not on a local subnet if any address is not.
        if case .standby = lan.use(host: "mixed", addresses: ["10.77.3.40", "203.0.113.5"]) {
        } else {
            Issue.record("a host with an off-subnet address counted as on the LAN")
        }
        let glob = try #require(try? Glob.compile("*.corp").get())
        let hosts = judge(allowed: ["wlan0"], prefer: .hosts([glob]))
        #expect(hosts.use(host: "cache.corp", addresses: ["203.0.113.5"]) == .use)
        if case .standby = hosts.use(host: "mirror.example", addresses: ["203.0.113.6"]) {
        } else {
            Issue.record("a host not listed was not standing by")
        }
        // Refusal comes first: a preferred host over a forbidden link is not used.
        if case .refuse = hosts.use(host: "x.corp", addresses: ["10.77.2.9"]) {
        } else {
            Issue.record("a preferred host over wwan0 was not refused")
        }
    }
}
