import Testing

@testable import Links

/// Hints from outside the kernel joined to the kernel's links, and the monitor that joins them.
@Suite struct HintTests {
    static func snapshot(_ links: [Link]) -> LinkSnapshot {
        LinkSnapshot(
            links: links, defaultRoutes: [DefaultRoute(family: .ipv4, linkIndex: 2, link: "wlan0", metric: 100)])
    }

    static let wlan = Link(index: 2, name: "wlan0", kind: .wlan, kindSource: "devtype=wlan", up: true, running: true)

    @Test func hintsJoinByNameAndSayWhereTheyCameFrom() {
        let hints = LinkHints(
            byName: [
                "wlan0": LinkHint(
                    metered: true, meteredSource: "networkmanager: guess-yes", ssid: "Pixel", bssid: "aa:bb")
            ],
            sources: ["networkmanager"])
        let joined = Self.snapshot([Self.wlan]).applying(hints)
        let link = joined.link(named: "wlan0")
        #expect(link?.meteredHint == true)
        #expect(link?.meteredHintSource == "networkmanager: guess-yes")
        #expect(link?.ssid == "Pixel" && link?.bssid == "aa:bb")
        #expect(joined.hintSources == ["networkmanager"])
        // A hint for a link the kernel does not have changes nothing.
        #expect(
            Self.snapshot([Self.wlan]).applying(LinkHints(byName: ["eth9": LinkHint(metered: true)])).links == [
                Self.wlan
            ])
    }

    @Test func anExplicitVerdictWinsOverAGuessWhateverTheOrder() {
        let guess = LinkHint(metered: true, meteredSource: "dhcp: ANDROID_METERED")
        let explicit = LinkHint(metered: false, meteredSource: "networkmanager: no", explicit: true)
        #expect(guess.filling(from: explicit).metered == false)
        #expect(explicit.filling(from: guess).metered == false)
        #expect(
            guess.filling(from: LinkHint(metered: false, meteredSource: "other guess")).meteredSource
                == "dhcp: ANDROID_METERED")
        let merged = LinkHints.merging([
            LinkHints(byName: ["wlan0": guess], sources: ["a"]), LinkHints(byName: ["wlan0": explicit], sources: ["b"]),
        ])
        #expect(merged.byName["wlan0"]?.meteredSource == "networkmanager: no")
        #expect(merged.sources == ["a", "b"])
    }

    @Test func joinWaitsForEverySourceThenDeliversOnlyChanges() {
        let join = HintJoin(sourceCount: 2)
        let kernel = Self.snapshot([Self.wlan])
        #expect(join.snapshot(kernel) == nil, "delivered before the hint sources spoke")
        #expect(join.hints(.none, from: 0) == nil)
        let first = join.hints(.none, from: 1)
        #expect(first?.sequence == 1)
        // The same facts again: nothing new to deliver.
        #expect(join.hints(.none, from: 1) == nil)
        var again = kernel
        again.sequence = 7
        again.timestamp = 3
        #expect(join.snapshot(again) == nil)
        // A hint alone (no kernel change) is a new snapshot, numbered next.
        let metered = LinkHints(
            byName: ["wlan0": LinkHint(metered: true, meteredSource: "networkmanager: yes", explicit: true)],
            sources: ["networkmanager"])
        let second = join.hints(metered, from: 0)
        #expect(second?.sequence == 2)
        #expect(second?.link(named: "wlan0")?.meteredHint == true)
        #expect(join.hints(.none, from: 0)?.link(named: "wlan0")?.meteredHint == nil)
    }

    @Test func hintedMonitorFollowsHintsWithoutAKernelChange() async throws {
        let kernel = StaticMonitor(snapshot: Self.snapshot([Self.wlan]))
        let source = ManualHints()
        let monitor = HintedLinkMonitor(base: kernel, sources: [source])
        var iterator = monitor.snapshots().makeAsyncIterator()
        source.send(.none)
        let first = try await iterator.next()
        #expect(first?.link(named: "wlan0")?.meteredHint == nil)
        source.send(
            LinkHints(
                byName: ["wlan0": LinkHint(metered: true, meteredSource: "networkmanager: guess-yes")],
                sources: ["networkmanager"]))
        let second = try await iterator.next()
        #expect(second?.link(named: "wlan0")?.meteredHint == true)
        #expect(second?.sequence == (first?.sequence ?? 0) + 1)
    }
}

/// A kernel that never changes: one snapshot, then silence until cancelled.
struct StaticMonitor: LinkMonitor {
    let snapshot: LinkSnapshot
    func snapshots() -> AsyncThrowingStream<LinkSnapshot, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: LinkSnapshot.self)
        continuation.yield(snapshot)
        return stream
    }
}

/// Hints a test sends by hand.
final class ManualHints: LinkHintSource, Sendable {
    let stream: AsyncStream<LinkHints>
    let continuation: AsyncStream<LinkHints>.Continuation
    init() { (stream, continuation) = AsyncStream.makeStream(of: LinkHints.self) }
    func hints() -> AsyncStream<LinkHints> { stream }
    func send(_ hints: LinkHints) { continuation.yield(hints) }
}
