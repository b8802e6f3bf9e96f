// bench/hints: from a D-Bus signal (no kernel change) to the daemon's transfer stopped, for each hint that
// can stop one: NetworkManager's Metered (the profile's connection.metered), NetworkManager's connectivity
// (its check answered by a captive portal) and UPower's OnBattery (python3-dbusmock's UPower at 18 %). A
// real NetworkManager on a private bus in a namespace (TestSupport's NetworkManagerLab), `meterwise
// serve` behind the hotspot, `meterwise daemon` downloading over it; each hint is flipped N times. The
// signal's time is dbus-monitor's on the bus that carries it; the pause's is when `meterwise watch --json`
// delivers the `paused` event. Needs root.
// Run: bench/hints/run.sh [N] [metered|connectivity|power|all]
import Foundation
import Lab
import TestSupport

let flips = CommandLine.arguments.count > 1 ? max(1, Int(CommandLine.arguments[1]) ?? 20) : 20
let binary = CommandLine.arguments.count > 2 ? CommandLine.arguments[2] : RepoPaths.binary
let chosen = CommandLine.arguments.count > 3 ? CommandLine.arguments[3] : "all"

/// One kind of hint change: how to set and clear it, the bus that signals it, the word the signal carries,
/// the policy that pauses on it.
struct Flip: Sendable {
    var name: String
    var what: String
    var policy: String
    /// The property the PropertiesChanged signal names (dbus-monitor prints `string "NAME"`).
    var property: String
}

@main
struct HintsBench {
    /// Each kind's stop times (decision to stopped), for the table's last column.
    nonisolated(unsafe) static var stopParts: [String: [Double]] = [:]

    static func main() async throws {
        let kinds = chosen == "all" ? ["metered", "connectivity", "power"] : [chosen]
        var rows: [(String, [Double])] = []
        for kind in kinds {
            guard let latencies = try await bench(kind) else { continue }
            rows.append((kind, latencies))
        }
        report(rows)
    }

    /// One kind's flips in a lab of its own; nil when it cannot run here (said why).
    nonisolated static func bench(_ kind: String) async throws -> [Double]? {
        if let reason = NetworkManagerLab.unavailableReason {
            print("bench/hints skipped: \(reason)")
            return nil
        }
        if kind == "power", let reason = PowerMock.unavailableReason {
            print("bench/hints power skipped: \(reason)")
            return nil
        }
        let lab = try await NetworkManagerLab.start(connectivityCheck: kind == "connectivity")
        defer { lab.teardown() }
        try lab.setMetered("no")
        if kind == "connectivity" { try lab.checkConnectivity() }
        // UPower and power-profiles-daemon as dbusmock plays them, on a bus of their own that the daemon takes
        // as its system bus (NetworkManager then says nothing to it: the link is judged by its kind).
        var power: PowerMock?
        defer { power?.stop() }
        if kind == "power" {
            let mock = try PowerMock()
            power = mock
            try mock.start(template: "upower", name: "org.freedesktop.UPower", parameters: "{\"OnBattery\": false}")
            try mock.setBattery(percent: 18, discharging: true)
        }
        let policy = lab.directory + "/policy.yaml"
        // The shipped defaults' rules for each hint, with a short hysteresis so the flips do not wait 5 s each.
        let rules =
            kind == "power"
            ? """
              - { name: low-battery, when: { power: battery, battery: "< 30%" }, action: pause }
              - { name: run, action: run }
            """
            : """
              - { name: run-unmetered, when: { metered: no }, action: run, via: unmetered }
              - { name: pause-metered, when: { metered: yes }, action: pause }
            """
        try "version: 1\ndefaults: { resume_after: 500ms, action: pause }\nrules:\n\(rules)\n".write(
            toFile: policy, atomically: true, encoding: .utf8)
        let bus = power?.address ?? lab.busAddress
        let (set, clear, property): (() throws -> Void, () throws -> Void, String) =
            switch kind {
            case "connectivity":
                (
                    {
                        try lab.setPortal(true)
                        try lab.checkConnectivity()
                    },
                    {
                        try lab.setPortal(false)
                        try lab.checkConnectivity()
                    }, "Connectivity"
                )
            case "power":
                ({ try power?.setOnBattery(true) }, { try power?.setOnBattery(false) }, "OnBattery")
            default:
                ({ try lab.setMetered("yes") }, { try lab.setMetered("no") }, "Metered")
            }
        let socket = lab.directory + "/d.sock"
        let server = [
            "ip", "netns", "exec", lab.accessPoint.name, binary, "serve", "--host", lab.gateway, "--port", "8080",
            "--size", "256MiB", "--rate", "1MiB/s",
        ]
        var latencies: [Double] = []
        var stops: [Double] = []
        _ = try await ChildProcess.run(server) { server in
            var served: LabRun.Served?
            for await line in server.lines {
                served = try? JSONDecoder().decode(LabRun.Served.self, from: Data(line.text.utf8))
                if served != nil { break }
            }
            guard let served else { throw LabError(.childFailed, "serve: \(server.stderrText)") }
            let daemon = [
                "ip", "netns", "exec", lab.device.name, "env", "DBUS_SYSTEM_BUS_ADDRESS=\(bus)", binary,
                "daemon", "--state", lab.directory + "/state", "--socket", socket, "--policy", policy,
            ]
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
                _ = try BinaryRun.run(
                    ["add", served.url, "-o", lab.directory + "/file.bin", "--socket", socket],
                    executable: binary)
                let monitor = try LineCollector([
                    "/usr/bin/dbus-monitor", "--address", bus,
                    "type='signal',member='PropertiesChanged'",
                ])
                defer { kill(monitor.process.processIdentifier, SIGKILL) }
                FileHandle.standardError.write(
                    Data("bench/hints \(kind): daemon up, job added; waiting for it to start\n".utf8))
                guard await watch.waitForLine(timeout: .seconds(20), { $0.contains("\"started\"") }) != nil else {
                    throw LabError(.childFailed, "the job did not start: \(daemon.stderrText.suffix(500))")
                }
                for _ in 0..<flips {
                    let watched = watch.received.count
                    let signals = monitor.received.count
                    try set()
                    guard let paused = await watch.waitForLine(after: watched, { $0.contains("\"event\":\"paused\"") })
                    else {
                        throw LabError(.childFailed, "no pause after the flip: \(watch.received.suffix(3).map(\.line))")
                    }
                    if let signal = signalTime(monitor.received.dropFirst(signals).map(\.line), property: property) {
                        latencies.append((paused.at.timeIntervalSince1970 - signal) * 1000)
                    }
                    // The part of it the stop itself took (decision to transfer stopped, checkpoint written).
                    if let event = try? JSONSerialization.jsonObject(with: Data(paused.line.utf8)) as? [String: Any],
                        let seconds = event["stop_seconds"] as? Double
                    {
                        stops.append(seconds * 1000)
                    }
                    let again = watch.received.count
                    try clear()
                    guard await watch.waitForLine(after: again, { $0.contains("\"event\":\"started\"") }) != nil
                    else { throw LabError(.childFailed, "no resume after the flip back") }
                }
                daemon.terminate()
                await daemon.outputEnded()
            }
            server.terminate()
        }
        stopParts[kind] = stops
        return latencies
    }

    /// The time (epoch seconds) of the first PropertiesChanged signal that carries `property` (or a name
    /// ending in it: `Ip4Connectivity` for `Connectivity`), from dbus-monitor's lines: `signal
    /// time=1700000000.123456 sender=... member=PropertiesChanged`, then its arguments on the lines after.
    nonisolated static func signalTime(_ lines: [String], property: String) -> Double? {
        var current: Double?
        for line in lines {
            if line.hasPrefix("signal time=") {
                current = Double(line.dropFirst("signal time=".count).prefix { $0 != " " })
            } else if line.contains("\(property)\""), let current {
                return current
            }
        }
        return nil
    }

    nonisolated static func report(_ rows: [(String, [Double])]) {
        defer { fflush(nil) }
        let what = [
            "metered": "NetworkManager Metered (connection.metered yes)",
            "connectivity": "NetworkManager connectivity (check answered by a portal)",
            "power": "UPower OnBattery at 18 % (dbusmock)",
        ]
        print(
            "| hint | flips (timed) | p50 signal -> paused | p99 | max | goal p99 | of it, the stop (decision -> stopped) p50 / p99 |"
        )
        print("|---|---|---|---|---|---|---|")
        var met = true
        for (kind, latencies) in rows {
            let sorted = latencies.sorted()
            func percentile(_ p: Double) -> Double {
                sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
            }
            let p99 = percentile(0.99)
            met = met && p99 <= 20 && sorted.count == flips
            print(
                "| \(what[kind] ?? kind) | \(flips) (\(sorted.count)) | \(String(format: "%.2f", percentile(0.5))) ms | "
                    + "\(String(format: "%.2f", p99)) ms | \(String(format: "%.2f", sorted.last ?? .nan)) ms | <= 20 ms | "
                    + "\(stopFigures(kind)) |")
        }
        print(met ? "PASS: p99 <= 20 ms for every hint" : "MISS: a p99 goal is not met")
    }

    nonisolated static func stopFigures(_ kind: String) -> String {
        let sorted = (stopParts[kind] ?? []).sorted()
        guard !sorted.isEmpty else { return "-" }
        let p50 = sorted[sorted.count / 2]
        let p99 = sorted[min(sorted.count - 1, Int(Double(sorted.count) * 0.99))]
        return String(format: "%.2f / %.2f ms", p50, p99)
    }
}
