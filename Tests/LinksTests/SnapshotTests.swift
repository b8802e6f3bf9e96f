import Links
import Testing

@Suite struct SnapshotTests {
    func link(_ index: Int, _ name: String, _ kind: LinkKind, up: Bool = true, running: Bool = true) -> Link {
        Link(index: index, name: name, kind: kind, kindSource: "test", up: up, running: running)
    }

    @Test func lowestMetricWins() {
        let snapshot = LinkSnapshot(
            links: [link(2, "wlan0", .wlan), link(3, "wwan0", .wwan)],
            defaultRoutes: [
                DefaultRoute(family: .ipv4, linkIndex: 3, link: "wwan0", metric: 600),
                DefaultRoute(family: .ipv4, linkIndex: 2, link: "wlan0", metric: 100),
            ])
        #expect(snapshot.primary?.name == "wlan0")
    }

    @Test func remetricMovesPrimary() {
        let snapshot = LinkSnapshot(
            links: [link(2, "wlan0", .wlan), link(3, "wwan0", .wwan)],
            defaultRoutes: [
                DefaultRoute(family: .ipv4, linkIndex: 3, link: "wwan0", metric: 50),
                DefaultRoute(family: .ipv4, linkIndex: 2, link: "wlan0", metric: 100),
            ])
        #expect(snapshot.primary?.name == "wwan0")
    }

    @Test func ipv4BeforeIPv6() {
        let snapshot = LinkSnapshot(
            links: [link(2, "wlan0", .wlan), link(3, "wwan0", .wwan)],
            defaultRoutes: [
                DefaultRoute(family: .ipv6, linkIndex: 2, link: "wlan0", metric: 1),
                DefaultRoute(family: .ipv4, linkIndex: 3, link: "wwan0", metric: 1000),
            ])
        #expect(snapshot.primary?.name == "wwan0")
    }

    @Test func ipv6OnlyPrimary() {
        let snapshot = LinkSnapshot(
            links: [link(2, "wlan0", .wlan), link(3, "wwan0", .wwan)],
            defaultRoutes: [
                DefaultRoute(family: .ipv6, linkIndex: 3, link: "wwan0", metric: 1024),
                DefaultRoute(family: .ipv6, linkIndex: 2, link: "wlan0", metric: 600),
            ])
        #expect(snapshot.primary?.name == "wlan0")
    }

    @Test func lingeringRouteOfDownLinkIsIgnored() {
        // The kernel keeps IPv6 routes (and briefly IPv4 ones) of a link that lost its carrier.
        let snapshot = LinkSnapshot(
            links: [link(2, "wlan0", .wlan, up: true, running: false), link(3, "wwan0", .wwan)],
            defaultRoutes: [
                DefaultRoute(family: .ipv4, linkIndex: 2, link: "wlan0", metric: 100),
                DefaultRoute(family: .ipv4, linkIndex: 3, link: "wwan0", metric: 600),
            ])
        #expect(snapshot.primary?.name == "wwan0")
        #expect(snapshot.uplinks.map(\.name) == ["wwan0"])
    }

    @Test func lingeringV4FallsBackToV6() {
        let snapshot = LinkSnapshot(
            links: [link(2, "wlan0", .wlan, up: false, running: false), link(3, "eth0", .ethernet)],
            defaultRoutes: [
                DefaultRoute(family: .ipv4, linkIndex: 2, link: "wlan0", metric: 100),
                DefaultRoute(family: .ipv6, linkIndex: 3, link: "eth0", metric: 1024),
            ])
        #expect(snapshot.primary?.name == "eth0")
    }

    @Test func noRouteNoPrimary() {
        let snapshot = LinkSnapshot(links: [link(2, "wlan0", .wlan)], defaultRoutes: [])
        #expect(snapshot.primary == nil)
    }

    @Test func metricTieBreaksOnIndex() {
        let snapshot = LinkSnapshot(
            links: [link(2, "eth0", .ethernet), link(3, "wlan0", .wlan)],
            defaultRoutes: [
                DefaultRoute(family: .ipv4, linkIndex: 3, link: "wlan0", metric: 100),
                DefaultRoute(family: .ipv4, linkIndex: 2, link: "eth0", metric: 100),
            ])
        #expect(snapshot.primary?.name == "eth0")
    }

    @Test func sameStateIgnoresSequence() {
        let a = LinkSnapshot(links: [link(2, "wlan0", .wlan)], defaultRoutes: [], sequence: 1, timestamp: 1)
        let b = LinkSnapshot(links: [link(2, "wlan0", .wlan)], defaultRoutes: [], sequence: 9, timestamp: 4)
        #expect(a.sameState(as: b))
        #expect(a != b)
    }
}
