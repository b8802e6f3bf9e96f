import Foundation
import Lab
import TestSupport
import Testing

/// Background mode in the kernel lab (root): wlan0 shaped as bench/background shapes it (tbf at 20 Mbit/s,
/// a 64 KiB burst, a queue of up to 250 ms, segmentation offloads off), reno in the server's namespace (bbr
/// keeps its queue short by itself and would hide the difference). A ping through the same
/// queue shows what a download does to everyone else on the link: curl fills the queue, `get --background`
/// keeps it within the goal of issue 27 (p95 within 10 ms of the idle link's).
extension LabKernelTests {
    @Test func backgroundModeKeepsTheLinksQueueShort() async throws {
        try await withLab("backgroundModeKeepsTheLinksQueueShort", size: "48MiB") { topology, served in
            _ = try topology.internet.exec(["sysctl", "-qw", "net.ipv4.tcp_congestion_control=reno"])
            let wlan = try #require(topology.uplink(named: "wlan0"))
            _ = try topology.internet.exec([
                "tc", "qdisc", "replace", "dev", wlan.peerName, "root", "tbf", "rate", "20mbit", "burst", "64kb",
                "latency", "250ms",
            ])
            for (namespace, interface) in [(topology.internet, wlan.peerName), (topology.device, wlan.name)] {
                _ = try namespace.exec(
                    ["ethtool", "-K", interface, "tso", "off", "gso", "off", "gro", "off"], allowFailure: true)
            }
            let output = NSTemporaryDirectory() + "mwbg-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).bin"
            defer {
                for suffix in ["", ".part", ".part.checkpoint"] {
                    try? FileManager.default.removeItem(atPath: output + suffix)
                }
            }
            let idle = try pingP95(topology, seconds: 1)
            let filled = try await pingP95(topology, during: ["curl", "-sS", "-o", "/dev/null", served.url])
            let background = try await pingP95(
                topology,
                during: [
                    RepoPaths.binary, "get", served.url, "-o", output, "--background",
                ])
            // The lab's queue fills under an ordinary download: the comparison means something.
            #expect(filled > idle + 20, "curl: ping p95 \(filled) ms, idle \(idle) ms")
            #expect(
                background <= idle + 10, "--background: ping p95 \(background) ms, idle \(idle) ms, curl \(filled) ms")
        }
    }

    /// The 95th percentile of a ping every 10 ms from the device to the server, in ms.
    func pingP95(_ topology: LabTopology, seconds: Double) throws -> Double {
        let out = try topology.device.exec(
            ["ping", "-n", "-i", "0.01", "-c", "\(Int(seconds * 100))", "-W", "1", LabTopology.serverAddress],
            allowFailure: true)
        let times = out.split(separator: "\n").compactMap { line -> Double? in
            guard let range = line.range(of: "time=") else { return nil }
            return Double(line[range.upperBound...].prefix { $0 == "." || $0.isNumber })
        }.sorted()
        try #require(times.count > Int(seconds * 50), "ping answered \(times.count) times:\n\(out)")
        return times[min(times.count - 1, Int(Double(times.count - 1) * 0.95))]
    }

    /// The same while `command` downloads in the device's namespace (after 1.5 s to take the link); the
    /// download is stopped afterwards.
    func pingP95(_ topology: LabTopology, during command: [String]) async throws -> Double {
        let process = Process()
        let ip = FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") ? "/usr/sbin/ip" : "/sbin/ip"
        process.executableURL = URL(fileURLWithPath: ip)
        process.arguments = ["netns", "exec", topology.device.name] + command
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer {
            if process.isRunning {
                process.interrupt()
                process.waitUntilExit()
            }
        }
        try await Task.sleep(for: .milliseconds(1500))
        try #require(process.isRunning, "\(command[0]) ended before the ping started")
        return try pingP95(topology, seconds: 2)
    }
}
