import Foundation
import Lab
import Links
import NetlinkLinks
import Synchronization
import TestSupport
import Testing

/// Kernel tests: each builds its own namespaces with veth links named wlan0 and wwan0 (default routes
/// via both, wlan0's metric lower), runs the real libnl monitor inside, and removes them after.
@Suite(.needsKernel) struct NetlinkMonitorKernelTests {
    /// Collects the monitor's snapshots on a task the test cancels when done.
    final class Recorder: Sendable {
        let snapshots = Mutex<[LinkSnapshot]>([])
        var all: [LinkSnapshot] { snapshots.withLock { $0 } }
        var latest: LinkSnapshot? { all.last }
    }

    func withMonitor(_ name: String, _ body: (VethUplinks, Recorder) async throws -> Void) async throws {
        let uplinks = try VethUplinks.create()
        defer { uplinks.delete() }
        let recorder = Recorder()
        let monitor = NetlinkLinkMonitor(namespacePath: uplinks.device.path)
        let stream = monitor.snapshots()
        let consumer = Task {
            for try await snapshot in stream { recorder.snapshots.withLock { $0.append(snapshot) } }
        }
        defer { consumer.cancel() }
        #expect(await eventually { recorder.latest != nil }, "no initial snapshot")
        try await body(uplinks, recorder)
    }

    @Test func initialDumpSeesVethUplinks() async throws {
        try await withMonitor("initialDumpSeesVethUplinks") { _, recorder in
            let snapshot = try #require(recorder.latest)
            #expect(snapshot.link(named: "wlan0")?.kind == .wlan)
            #expect(snapshot.link(named: "wwan0")?.kind == .wwan)
            #expect(snapshot.link(named: "wlan0")?.kindSource == "name=wlan0 (over type=veth)")
            #expect(snapshot.link(named: "lo")?.kind == .loopback)
            #expect(snapshot.link(named: "wlan0")?.ipv4 == ["10.77.1.2/24"])
            #expect(snapshot.defaultRoutes.count == 2)
            #expect(snapshot.primary?.name == "wlan0")
        }
    }

    /// The kernel's route to an address (`ip route get`): routes other than the default ones and rules by source,
    /// in the monitor's namespace. Only lookups: no packet is sent.
    @Test func theKernelSaysWhichLinkAnAddressIsReachedOver() async throws {
        let uplinks = try VethUplinks.create()
        defer { uplinks.delete() }
        let monitor = NetlinkLinkMonitor(namespacePath: uplinks.device.path)
        let stream = monitor.snapshots()
        let latest = Mutex<LinkSnapshot?>(nil)
        let consumer = Task { for try await snapshot in stream { latest.withLock { $0 = snapshot } } }
        defer { consumer.cancel() }
        #expect(await eventually { latest.withLock { $0 } != nil }, "no initial snapshot")
        let snapshot = try #require(latest.withLock { $0 })
        let wlan0 = try #require(snapshot.link(named: "wlan0")).index
        let wwan0 = try #require(snapshot.link(named: "wwan0")).index
        try uplinks.device.ip("route", "add", "10.99.0.0/16", "via", "10.77.2.1", "dev", "wwan0")
        try uplinks.device.ip("route", "add", "unreachable", "10.98.0.0/16")
        try uplinks.device.ip("-6", "addr", "add", "fd99::2/64", "dev", "wwan0", "nodad")
        try uplinks.device.ip("-6", "route", "add", "fd98::/48", "via", "fd99::1", "dev", "wwan0")
        #expect(monitor.outgoingRoute(to: "10.99.1.1", from: nil) == KernelRoute(linkIndex: wwan0, isDefault: false))
        #expect(monitor.outgoingRoute(to: "198.51.100.7", from: nil) == KernelRoute(linkIndex: wlan0, isDefault: true))
        // From wwan0's address, the lab's rule by source routes it over wwan0.
        #expect(
            monitor.outgoingRoute(to: "198.51.100.7", from: "10.77.2.2")
                == KernelRoute(linkIndex: wwan0, isDefault: true))
        #expect(monitor.outgoingRoute(to: "fd98::5", from: nil) == KernelRoute(linkIndex: wwan0, isDefault: false))
        #expect(monitor.outgoingRoute(to: "10.98.0.1", from: nil) == nil)
        #expect(monitor.outgoingRoute(to: "not an address", from: nil) == nil)
        // A source address that is not this machine's: no answer, not an error.
        #expect(monitor.outgoingRoute(to: "198.51.100.7", from: "192.0.2.1") == nil)
        consumer.cancel()
        // Once the monitor stops, nothing answers.
        #expect(await eventually { monitor.outgoingRoute(to: "10.99.1.1", from: nil) == nil })
    }

    @Test func linkDownMovesPrimaryAndBack() async throws {
        try await withMonitor("linkDownMovesPrimaryAndBack") { uplinks, recorder in
            try uplinks.device.ip("link", "set", "wlan0", "down")
            #expect(await eventually { recorder.latest?.primary?.name == "wwan0" }, "primary did not move to wwan0")
            #expect(recorder.latest?.link(named: "wlan0")?.up == false)
            // The kernel dropped wlan0's route without RTM_DELROUTE; the monitor re-read routes anyway.
            #expect(recorder.latest?.defaultRoutes.contains { $0.link == "wlan0" && $0.family == .ipv4 } == false)

            try uplinks.device.ip("link", "set", "wlan0", "up")
            try uplinks.device.ip("route", "add", "default", "via", "10.77.1.1", "dev", "wlan0", "metric", "100")
            #expect(await eventually { recorder.latest?.primary?.name == "wlan0" }, "primary did not return to wlan0")
        }
    }

    @Test func addressAddAndRemove() async throws {
        try await withMonitor("addressAddAndRemove") { uplinks, recorder in
            try uplinks.device.ip("addr", "add", "10.77.9.9/32", "dev", "wwan0")
            #expect(await eventually { recorder.latest?.link(named: "wwan0")?.ipv4.contains("10.77.9.9") == true })
            try uplinks.device.ip("addr", "add", "fd77::9/64", "dev", "wwan0", "nodad")
            #expect(await eventually { recorder.latest?.link(named: "wwan0")?.ipv6.contains("fd77::9/64") == true })
            try uplinks.device.ip("addr", "del", "10.77.9.9/32", "dev", "wwan0")
            #expect(await eventually { recorder.latest?.link(named: "wwan0")?.ipv4.contains("10.77.9.9") == false })
        }
    }

    @Test func defaultRouteRemetricAddRemove() async throws {
        try await withMonitor("defaultRouteRemetricAddRemove") { uplinks, recorder in
            // Re-metric: wwan0 becomes cheaper than wlan0.
            try uplinks.device.ip("route", "del", "default", "via", "10.77.2.1", "dev", "wwan0", "metric", "600")
            #expect(await eventually { recorder.latest?.defaultRoutes.count == 1 })
            try uplinks.device.ip("route", "add", "default", "via", "10.77.2.1", "dev", "wwan0", "metric", "50")
            #expect(await eventually { recorder.latest?.primary?.name == "wwan0" }, "re-metric did not move primary")
            #expect(recorder.latest?.defaultRoutes.first { $0.link == "wwan0" }?.metric == 50)
            #expect(recorder.latest?.defaultRoutes.first { $0.link == "wwan0" }?.gateway == "10.77.2.1")
            // Removed: the primary falls back to wlan0.
            try uplinks.device.ip("route", "del", "default", "via", "10.77.2.1", "dev", "wwan0", "metric", "50")
            #expect(await eventually { recorder.latest?.primary?.name == "wlan0" })
            // IPv6 default route only: v4 routes gone, v6 decides.
            try uplinks.device.ip("addr", "add", "fd78::2/64", "dev", "wwan0", "nodad")
            try uplinks.device.ip("-6", "route", "add", "default", "via", "fd78::1", "dev", "wwan0", "metric", "10")
            try uplinks.device.ip("route", "del", "default", "via", "10.77.1.1", "dev", "wlan0", "metric", "100")
            #expect(await eventually { recorder.latest?.primary?.name == "wwan0" }, "IPv6 default route ignored")
            #expect(recorder.latest?.defaultRoutes.contains { $0.family == .ipv6 && $0.link == "wwan0" } == true)
        }
    }

    @Test func unchangedStateDeliversNoSnapshot() async throws {
        try await withMonitor("unchangedStateDeliversNoSnapshot") { uplinks, recorder in
            let before = recorder.all.count
            // Setting an already-up link up sends nothing that changes the state.
            try uplinks.device.ip("link", "set", "wlan0", "up")
            try uplinks.device.ip("addr", "add", "10.77.9.10/32", "dev", "wlan0")
            #expect(await eventually { recorder.latest?.link(named: "wlan0")?.ipv4.count == 2 })
            let sequences = recorder.all.map(\.sequence)
            #expect(sequences == Array(1...UInt64(sequences.count)), "sequence numbers must be consecutive")
            #expect(recorder.all.count <= before + 2)
        }
    }

    @Test(.timeLimit(.minutes(1))) func stopsWhenConsumerCancels() async throws {
        let namespace = try Netns.create(prefix: "mwstop")
        defer { namespace.delete() }
        let stream = NetlinkLinkMonitor(namespacePath: namespace.path).snapshots()
        let (arrivals, arrived) = AsyncStream.makeStream(of: Void.self)
        let task = Task { () -> Int in
            var count = 0
            for try await _ in stream {
                count += 1
                arrived.yield()
            }
            return count
        }
        // Cancelled once the first snapshot is in (the monitor runs), not after a guess at how long that takes;
        // a monitor that ignored the cancellation would hang here until the time limit.
        for await _ in arrivals { break }
        task.cancel()
        let count = try await task.value
        #expect(count >= 1)
    }

    /// Writes `lines` to a file and runs them as one `ip -batch` in the device namespace.
    func batch(_ uplinks: VethUplinks, _ lines: [String]) throws {
        let file = NSTemporaryDirectory() + "mwbatch-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try lines.joined(separator: "\n").appending("\n").write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        try Command.run(["ip", "-n", uplinks.device.name, "-batch", file])
    }

    @Test func churnOfOtherRoutesDeliversNoSnapshot() async throws {
        try await withMonitor("churnOfOtherRoutesDeliversNoSnapshot") { uplinks, recorder in
            let before = try #require(recorder.latest)
            let routes = (0..<2000).map { "10.99.\($0 >> 8).\($0 & 255)/32 dev wwan0" }
            try batch(uplinks, routes.map { "route add \($0)" } + routes.map { "route del \($0)" })
            // A change the monitor must report: the next snapshot is the very next number, so the 4000 route
            // messages before it delivered nothing.
            try uplinks.device.ip("addr", "add", "10.77.9.10/32", "dev", "wlan0")
            #expect(await eventually { recorder.latest?.link(named: "wlan0")?.ipv4.contains("10.77.9.10") == true })
            #expect(recorder.latest?.sequence == before.sequence + 1, "snapshots: \(recorder.all.map(\.sequence))")
            #expect(recorder.latest?.defaultRoutes == before.defaultRoutes)
        }
    }

    @Test func followedStateEqualsAFreshRead() async throws {
        try await withMonitor("followedStateEqualsAFreshRead") { uplinks, recorder in
            // Routes come and go by events; a link goes down (the kernel drops its IPv4 routes silently),
            // comes back, and gets a new default; other tables and non-default routes change meanwhile.
            try batch(
                uplinks,
                (0..<500).map { "route add 10.98.\($0 >> 8).\($0 & 255)/32 dev wlan0" } + [
                    "route add default via 10.77.2.1 dev wwan0 metric 50 table 100",
                    "route add default via 10.77.2.1 dev wwan0 metric 900",
                    "link set wlan0 down",
                    "link set wlan0 up",
                    "route add default via 10.77.1.1 dev wlan0 metric 300",
                    "route del default via 10.77.2.1 dev wwan0 metric 600",
                ])
            #expect(
                await eventually {
                    recorder.latest?.defaultRoutes.filter { $0.family == .ipv4 }.map(\.metric).sorted() == [300, 900]
                }, "followed: \(String(describing: recorder.latest?.defaultRoutes))")
            // A monitor started now reads the same state from scratch.
            let fresh = NetlinkLinkMonitor(namespacePath: uplinks.device.path).snapshots()
            var iterator = fresh.makeAsyncIterator()
            let read = try #require(try await iterator.next())
            #expect(
                recorder.latest?.sameState(as: read) == true,
                "followed \(String(describing: recorder.latest?.defaultRoutes)) read \(read.defaultRoutes)")
        }
    }
}
