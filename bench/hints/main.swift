// bench/hints: from NetworkManager's D-Bus signal (a link marked metered, no kernel change) to the daemon's
// transfer stopped. A real NetworkManager on a private bus in a namespace (TestSupport's
// NetworkManagerLab), `meterwise serve` behind the hotspot, `meterwise daemon` downloading over it; the
// profile's connection.metered is flipped N times. The signal's time is dbus-monitor's on the same bus;
// the pause's is when `meterwise watch --json` delivers the `paused` event. Needs root.
// Run: bench/hints/run.sh [N]
import Foundation
import Lab
import TestSupport

let flips = CommandLine.arguments.count > 1 ? max(1, Int(CommandLine.arguments[1]) ?? 20) : 20
let binary = CommandLine.arguments.count > 2 ? CommandLine.arguments[2] : RepoPaths.binary

@main
struct HintsBench {
    static func main() async throws { try await bench() }

    /// The whole bench, off the main actor (the closures run on the children's scopes).
    nonisolated static func bench() async throws {
        if let reason = NetworkManagerLab.unavailableReason {
            print("bench/hints skipped: \(reason)")
            return
        }
        let lab = try await NetworkManagerLab.start()
        defer { lab.teardown() }
        try lab.setMetered("no")
        let policy = lab.directory + "/policy.yaml"
        // The shipped default with a short hysteresis, so the flips do not wait 5 s each.
        try """
            version: 1
            defaults: { resume_after: 500ms, action: pause }
            rules:
              - { name: run-unmetered, when: { metered: no }, action: run, via: unmetered }
              - { name: pause-metered, when: { metered: yes }, action: pause }
            """.write(toFile: policy, atomically: true, encoding: .utf8)
        let socket = lab.directory + "/d.sock"
        let server = ["ip", "netns", "exec", lab.accessPoint.name, binary, "serve", "--host", lab.gateway, "--port", "8080",
                      "--size", "256MiB", "--rate", "1MiB/s"]
        _ = try await ChildProcess.run(server) { server in
            var served: LabRun.Served?
            for await line in server.lines {
                served = try? JSONDecoder().decode(LabRun.Served.self, from: Data(line.text.utf8))
                if served != nil { break }
            }
            guard let served else { throw LabError(.childFailed, "serve: \(server.stderrText)") }
            let daemon = lab.onDevice([binary, "daemon", "--state", lab.directory + "/state", "--socket", socket,
                                       "--policy", policy])
            _ = try await ChildProcess.run(daemon) { daemon in
                let deadline = ContinuousClock.now + .seconds(20)
                while !FileManager.default.fileExists(atPath: socket), ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))
                }
                guard FileManager.default.fileExists(atPath: socket) else {
                    throw LabError(.childFailed, "the daemon did not start: \(daemon.stderrText.suffix(800))")
                }
                let watch = try LineCollector([binary, "watch", "--json", "--socket", socket])
                // Signalled, not waited for: Foundation's waitUntilExit can miss the exit of a child started
                // beside the lab's daemons.
                defer { kill(watch.process.processIdentifier, SIGKILL) }
                _ = await watch.waitForLine(timeout: .seconds(10)) { $0.contains("\"links\"") }
                _ = try BinaryRun.run(["add", served.url, "-o", lab.directory + "/file.bin", "--socket", socket],
                                      executable: binary)
                let monitor = try LineCollector(["/usr/bin/dbus-monitor", "--address", lab.busAddress,
                                                 "type='signal',member='PropertiesChanged'"])
                defer { kill(monitor.process.processIdentifier, SIGKILL) }
                FileHandle.standardError.write(Data("bench/hints: daemon up, job added; waiting for it to start\n".utf8))
                guard await watch.waitForLine(timeout: .seconds(20), { $0.contains("\"started\"") }) != nil else {
                    throw LabError(.childFailed, "the job did not start: \(daemon.stderrText.suffix(500))")
                }
                var latencies: [Double] = []
                for _ in 0..<flips {
                    let watched = watch.received.count, signals = monitor.received.count
                    try lab.setMetered("yes")
                    guard let paused = await watch.waitForLine(after: watched, { $0.contains("\"event\":\"paused\"") })
                    else {
                        throw LabError(.childFailed, "no pause after the flip: \(watch.received.suffix(3).map(\.line))")
                    }
                    if let signal = signalTime(monitor.received.dropFirst(signals).map(\.line)) {
                        latencies.append((paused.at.timeIntervalSince1970 - signal) * 1000)
                    }
                    let again = watch.received.count
                    try lab.setMetered("no")
                    guard await watch.waitForLine(after: again, { $0.contains("\"event\":\"started\"") }) != nil
                    else { throw LabError(.childFailed, "no resume after the flip back") }
                }
                report(latencies)
                daemon.terminate()
                await daemon.outputEnded()
            }
            server.terminate()
        }
    }

    /// The time (epoch seconds) of the first PropertiesChanged signal that carries `Metered`, from
    /// dbus-monitor's lines: `signal time=1700000000.123456 sender=... member=PropertiesChanged`, then its
    /// arguments on the lines after.
    nonisolated static func signalTime(_ lines: [String]) -> Double? {
        var current: Double?
        for line in lines {
            if line.hasPrefix("signal time=") {
                current = Double(line.dropFirst("signal time=".count).prefix { $0 != " " })
            } else if line.contains("\"Metered\""), let current {
                return current
            }
        }
        return nil
    }

    nonisolated static func report(_ latencies: [Double]) {
        defer { fflush(nil) }
        let sorted = latencies.sorted()
        func percentile(_ p: Double) -> Double {
            sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }
        let p99 = percentile(0.99)
        print("| metric | value | goal |")
        print("|---|---|---|")
        print("| flips (connection.metered yes, no kernel change) | \(flips) (\(sorted.count) timed) | |")
        print("| p50 D-Bus signal -> paused | \(String(format: "%.2f", percentile(0.5))) ms | |")
        print("| p99 D-Bus signal -> paused | \(String(format: "%.2f", p99)) ms | <= 20 ms |")
        print("| max | \(String(format: "%.2f", sorted.last ?? .nan)) ms | |")
        print(p99 <= 20 && sorted.count == flips ? "PASS: p99 <= 20 ms" : "MISS: the p99 goal is not met")
    }
}
