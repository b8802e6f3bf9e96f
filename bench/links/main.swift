// bench/links: latency from a kernel link change inside a network namespace to the snapshot the
// netlink monitor delivers. Needs root. Run: bench/links/run.sh
import Foundation
import Lab
import Links
import TestSupport
import NetlinkLinks
import Synchronization

let toggles = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 200 : 200

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
        let inbox = Inbox()
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
        var latencies: [Double] = []
        var misses = 0
        for i in 0..<toggles {
            let goingDown = i % 2 == 0
            let seen = inbox.state.withLock { $0.count }
            let start = ContinuousClock.now
            input.fileHandleForWriting.write(Data("link set wlan0 \(goingDown ? "down" : "up")\n".utf8))
            let deadline = start + .seconds(2)
            var delivered: ContinuousClock.Instant?
            while delivered == nil && ContinuousClock.now < deadline {
                delivered = inbox.state.withLock { all in
                    all.dropFirst(seen).first { $0.1.link(named: "wlan0")?.up == !goingDown }?.0
                }
                if delivered == nil { try await Task.sleep(for: .microseconds(200)) }
            }
            if let delivered {
                latencies.append((delivered - start).seconds * 1000)
            } else {
                misses += 1
            }
        }
        latencies.sort()
        func percentile(_ p: Double) -> Double {
            latencies.isEmpty ? .nan : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]
        }
        let p50 = percentile(0.5), p99 = percentile(0.99)
        print("| metric | value | goal |")
        print("|---|---|---|")
        print("| toggles (ip link set wlan0 down/up) | \(toggles) (\(misses) missed) | 0 missed |")
        print("| p50 kernel change -> snapshot | \(String(format: "%.2f", p50)) ms | |")
        print("| p99 kernel change -> snapshot | \(String(format: "%.2f", p99)) ms | <= 5 ms |")
        print("| max | \(String(format: "%.2f", latencies.last ?? .nan)) ms | |")
        print(p99 <= 5 && misses == 0 ? "PASS: p99 <= 5 ms" : "MISS: p99 goal not met")
    }
}

extension Duration {
    var seconds: Double {
        let (s, a) = components
        return Double(s) + Double(a) / 1e18
    }
}
