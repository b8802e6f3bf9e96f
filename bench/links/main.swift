// bench/links: latency from a kernel link change inside a network namespace to the snapshot the
// netlink monitor delivers, with ROUTES extra (non-default) routes in the main table: the time to the first
// snapshot, the change latency, the CPU that churn of other routes costs, and peak memory. Needs root.
// Run: bench/links/run.sh [TOGGLES] [ROUTES]
import Foundation
import Lab
import Links
import TestSupport
import NetlinkLinks
import Synchronization

let toggles = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 200 : 200
let extraRoutes = CommandLine.arguments.count > 2 ? Int(CommandLine.arguments[2]) ?? 0 : 0
let churnRoutes = 2000

/// CPU seconds this process has used (user + system).
func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// A field of /proc/self/status in KiB (VmHWM, VmRSS).
func status(_ field: String) -> Int {
    let text = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = text.split(separator: "\n").first { $0.hasPrefix(field + ":") } ?? ""
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
}

/// `count` host routes 10.A.B.C/32 on wwan0 (the link the toggles leave alone), as `ip -batch` lines.
func routeLines(_ verb: String, count: Int, offset: Int = 0) -> String {
    var text = ""
    text.reserveCapacity(count * 48)
    for i in offset..<(offset + count) {
        text += "route \(verb) 10.\(100 + (i >> 16) % 100).\((i >> 8) & 255).\(i & 255)/32 dev wwan0 metric 7\n"
    }
    return text
}

final class Inbox: Sendable {
    let state = Mutex<[(ContinuousClock.Instant, LinkSnapshot)]>([])
}

@main
struct LinksBench {
    static func main() async throws {
        if let reason = Netns.unavailableReason() {
            print("bench/links skipped: \(reason)")
            return
        }
        let uplinks = try VethUplinks.create(prefix: "mwbench")
        defer { uplinks.delete() }
        if extraRoutes > 0 {
            let loaded = ContinuousClock.now
            let file = NSTemporaryDirectory() + "mwbench-routes-\(getpid())"
            try routeLines("add", count: extraRoutes).write(toFile: file, atomically: false, encoding: .utf8)
            defer { try? FileManager.default.removeItem(atPath: file) }
            try Command.run(["ip", "-n", uplinks.device.name, "-batch", file])
            print("loaded \(extraRoutes) routes in \(String(format: "%.1f", (ContinuousClock.now - loaded).seconds)) s")
        }
        let memoryBefore = status("VmRSS")
        let inbox = Inbox()
        let monitorStart = ContinuousClock.now
        let stream = NetlinkLinkMonitor(namespacePath: uplinks.device.path).snapshots()
        let consumer = Task {
            for try await snapshot in stream {
                let now = ContinuousClock.now
                inbox.state.withLock { $0.append((now, snapshot)) }
            }
        }
        defer { consumer.cancel() }

        // One long-lived `ip -batch` so a change costs a write, not a process start.
        let ip = Process()
        ip.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        ip.arguments = ["-n", uplinks.device.name, "-force", "-batch", "-"]
        let input = Pipe()
        ip.standardInput = input
        try ip.run()
        defer { try? input.fileHandleForWriting.close(); ip.waitUntilExit() }

        while inbox.state.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(1)) }
        let firstSnapshot = (inbox.state.withLock { $0[0].0 } - monitorStart).seconds
        let firstRoutes = inbox.state.withLock { $0[0].1.defaultRoutes.count }

        // Churn: add and remove routes that are not default routes; the monitor should barely notice.
        let churnSeen = inbox.state.withLock { $0.count }
        let cpuBefore = cpuSeconds()
        let churnStart = ContinuousClock.now
        input.fileHandleForWriting.write(Data((routeLines("add", count: churnRoutes / 2, offset: 5_000_000)
            + routeLines("del", count: churnRoutes / 2, offset: 5_000_000)).utf8))
        try await Task.sleep(for: .seconds(2))
        let churnWall = (ContinuousClock.now - churnStart).seconds
        let churnCPU = (cpuSeconds() - cpuBefore) / churnWall * 100
        let churnSnapshots = inbox.state.withLock { $0.count } - churnSeen

        /// Latencies (ms) from writing each change to `ip` to the snapshot that shows it.
        func measure(_ count: Int, change: (Int) -> String, shows: @escaping @Sendable (Int, LinkSnapshot) -> Bool)
            async throws -> (latencies: [Double], misses: Int)
        {
            var latencies: [Double] = []
            var misses = 0
            for i in 0..<count {
                let seen = inbox.state.withLock { $0.count }
                let start = ContinuousClock.now
                input.fileHandleForWriting.write(Data((change(i) + "\n").utf8))
                let deadline = start + .seconds(2)
                var delivered: ContinuousClock.Instant?
                while delivered == nil && ContinuousClock.now < deadline {
                    delivered = inbox.state.withLock { all in all.dropFirst(seen).first { shows(i, $0.1) }?.0 }
                    if delivered == nil { try await Task.sleep(for: .microseconds(200)) }
                }
                if let delivered { latencies.append((delivered - start).seconds * 1000) } else { misses += 1 }
            }
            return (latencies.sorted(), misses)
        }
        let rssAfterFirst = status("VmRSS")
        // A link going down and up: the kernel walks its whole table to drop the link's routes first.
        var (latencies, misses) = try await measure(
            toggles, change: { "link set wlan0 \($0 % 2 == 0 ? "down" : "up")" },
            shows: { i, snapshot in snapshot.link(named: "wlan0")?.up == (i % 2 != 0) })
        // An address coming and going: cheap in the kernel, so this is the monitor's own latency.
        let (addressLatencies, addressMisses) = try await measure(
            toggles, change: { "address \($0 % 2 == 0 ? "add" : "del") 10.77.9.9/32 dev wwan0" },
            shows: { i, snapshot in snapshot.link(named: "wwan0")?.ipv4.contains("10.77.9.9") == (i % 2 == 0) })
        let rssAtEnd = status("VmRSS")
        func percentile(_ values: [Double], _ p: Double) -> Double {
            values.isEmpty ? .nan : values[min(values.count - 1, Int(Double(values.count) * p))]
        }
        let p50 = percentile(latencies, 0.5), p99 = percentile(latencies, 0.99)
        let addressP50 = percentile(addressLatencies, 0.5), addressP99 = percentile(addressLatencies, 0.99)
        misses += addressMisses
        print("| metric | value | goal |")
        print("|---|---|---|")
        print("| routes in main (besides the defaults) | \(extraRoutes) | |")
        print("| first snapshot | \(String(format: "%.3f", firstSnapshot)) s (\(firstRoutes) default routes) | <= 2 s |")
        print("| churn: \(churnRoutes) non-default route changes | \(String(format: "%.2f", churnCPU)) % of a core over \(String(format: "%.1f", churnWall)) s, \(churnSnapshots) snapshots | <= 1 %, 0 snapshots |")
        print("| RSS before the monitor / after its first snapshot / at the end | \(memoryBefore / 1024) / \(rssAfterFirst / 1024) / \(rssAtEnd / 1024) MiB | independent of routes |")
        print("| toggles: link down/up, address add/del | \(toggles) + \(toggles) (\(misses) missed) | 0 missed |")
        print("| link down/up -> snapshot p50 / p99 (includes the kernel's table walk) | \(String(format: "%.2f", p50)) / \(String(format: "%.2f", p99)) ms | <= 5 ms |")
        print("| address add/del -> snapshot p50 / p99 | \(String(format: "%.2f", addressP50)) / \(String(format: "%.2f", addressP99)) ms | <= 5 ms |")
        let pass = max(p99, addressP99) <= 5 && misses == 0 && firstSnapshot <= 2 && churnCPU <= 1 && churnSnapshots == 0
        print(pass ? "PASS: every goal met" : "MISS: a goal is not met")
    }
}

extension Duration {
    var seconds: Double {
        let (s, a) = components
        return Double(s) + Double(a) / 1e18
    }
}
