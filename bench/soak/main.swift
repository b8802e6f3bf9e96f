// bench/soak: the daemon under a long, hostile run. N jobs against one RangeServer whose faults rotate
// every 10 s (connection resets, truncated bodies, 503s with Retry-After, dripping 500 B/s responses,
// clean spells) while a scenario flaps the primary link between Wi-Fi and a metered modem F times over
// M minutes (the default policy pauses on the metered link). Checks: the daemon never dies (same pid
// throughout), every job completes with the right sha256 (the daemon's and the file's), and its memory
// stays flat (VmRSS and RssAnon sampled every 5 s). A flap drops Wi-Fi (every transfer pauses, its
// checkpoint flushed) and the next brings it back (each resumes after the 1 s hysteresis). Prints a Markdown table. No root; loopback only.
// Run: bench/soak/run.sh [JOBS=50] [MINUTES=10] [FLAPS=100]
import Foundation
import MeterwiseClient
import RangeServer
import TestSupport

let arguments = CommandLine.arguments
let binary = arguments.count > 1 ? arguments[1] : RepoPaths.binary
let jobCount = arguments.count > 2 ? max(1, Int(arguments[2]) ?? 50) : 50
let minutes = arguments.count > 3 ? max(1, Double(arguments[3]) ?? 10) : 10
let flaps = arguments.count > 4 ? max(2, Int(arguments[4]) ?? 100) : 100
let fileSize: Int64 = 8 << 20

@main
struct SoakBench {
    static func main() async throws {
        let ok = try await soak()
        exit(ok ? 0 : 1)
    }

    /// Every response is throttled so the transfers span the whole run (about 12 responses at once,
    /// Wi-Fi half the time); the faults come on top.
    static let pace = max(16 << 10, Int(Double(jobCount) * Double(fileSize) / (minutes * 60 * 0.5 * 12) * 1.2))

    static let faultCycle: [(String, [RangeFault])] = [
        ("resets", [.reset(after: 300_000, times: 6), .throttle(bytesPerSecond: pace)]),
        ("truncations", [.truncate(after: 500_000, times: 6), .throttle(bytesPerSecond: pace)]),
        ("503s", [.unavailable(retryAfter: 1, times: 8), .throttle(bytesPerSecond: pace)]),
        ("stalls", [.throttle(bytesPerSecond: 500)]),
        ("clean", [.throttle(bytesPerSecond: pace)]),
    ]

    static func soak() async throws -> Bool {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("mw-soak-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: work + "/out", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let content = RangeContent.generated(size: fileSize, seed: 77)
        let server = try await RangeServer.start(content: content)

        // Links: Wi-Fi and a metered modem both up; the primary alternates, F flaps over M minutes.
        let period = minutes * 60 / Double(flaps)
        var steps = ["  - { at: 0s, up: [wlan0, wwan0], primary: wlan0 }"]
        for flap in 1...flaps {
            // Wi-Fi drops (only the metered modem is left: every transfer pauses), then comes back.
            let at = Int(Double(flap) * period * 1000)
            steps.append(flap % 2 == 1 ? "  - { at: \(at)ms, down: [wlan0], primary: wwan0 }" : "  - { at: \(at)ms, up: [wlan0], primary: wlan0 }")
        }
        if flaps % 2 == 1 { steps.append("  - { at: \(Int((Double(flaps) + 0.5) * period * 1000))ms, up: [wlan0], primary: wlan0 }") }
        try """
            links:
              wlan0: { kind: wlan }
              wwan0: { kind: wwan }
            steps:
            \(steps.joined(separator: "\n"))
            end: 24h
            """.write(toFile: work + "/links.yaml", atomically: true, encoding: .utf8)
        try """
            version: 1
            defaults: { resume_after: 1s, action: pause }
            rules:
              - { name: run-unmetered, when: { metered: no }, action: run, via: unmetered }
              - { name: pause-metered, when: { metered: yes }, action: pause }
            """.write(toFile: work + "/policy.yaml", atomically: true, encoding: .utf8)

        let socket = work + "/d.sock"
        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: binary)
        daemon.arguments = ["daemon", "--links", "scenario", "--scenario", work + "/links.yaml", "--policy", work + "/policy.yaml",
                            "--state", work + "/state", "--socket", socket]
        daemon.standardOutput = FileHandle.nullDevice
        // The daemon's log (stderr) is kept: each transfer stopped by the policy logs a "paused" line.
        guard FileManager.default.createFile(atPath: work + "/daemon.log", contents: nil) else {
            throw SoakError("cannot create \(work)/daemon.log")
        }
        daemon.standardError = FileHandle(forWritingAtPath: work + "/daemon.log")
        try daemon.run()
        let pid = daemon.processIdentifier
        defer { if daemon.isRunning { daemon.terminate() } }
        let started = Date()
        while !FileManager.default.fileExists(atPath: socket), Date().timeIntervalSince(started) < 20 {
            try await Task.sleep(for: .milliseconds(50))
        }
        let client = ControlClient(socketPath: socket)
        for index in 0..<jobCount {
            let spec = JobSpec(url: server.url("/job\(index).bin"), destination: work + "/out/job\(index).bin",
                               sha256: content.sha256Hex())
            let (status, body) = try await client.request(.POST, "/v1/jobs", body: try ControlAPI.encoder().encode(spec))
            guard status == 201 else { throw SoakError("add failed: \(String(decoding: body, as: UTF8.self))") }
        }

        var samples: [(seconds: Int, rss: Int, anon: Int)] = []
        var phase = 0
        var faultSpells: [String: Int] = [:]
        let flapEnd = started.addingTimeInterval(minutes * 60)
        let deadline = flapEnd.addingTimeInterval(600)
        var jobs: [JobStatus] = []
        var died = false
        while Date() < deadline {
            if Date() < flapEnd {
                let (name, faults) = faultCycle[phase % faultCycle.count]
                server.setFaults(faults)
                faultSpells[name, default: 0] += 1
                phase += 1
            } else {
                server.setFaults([.throttle(bytesPerSecond: pace)])
            }
            for _ in 0..<2 {
                try await Task.sleep(for: .seconds(5))
                guard kill(pid, 0) == 0, daemon.isRunning else { died = true; break }
                let (rss, anon) = memory(pid)
                samples.append((Int(Date().timeIntervalSince(started)), rss, anon))
            }
            if died { break }
            jobs = (try? await client.call(.GET, "/v1/jobs", as: [JobStatus].self).0) ?? jobs
            if Date() >= flapEnd, !jobs.isEmpty, jobs.allSatisfy({ $0.job.state.isFinal }) { break }
        }
        let elapsed = Date().timeIntervalSince(started)
        let completed = jobs.filter { $0.job.state == .completed }
        var filesRight = 0
        for status in completed where status.job.sha256 == content.sha256Hex() {
            if sha256(of: status.job.destination) == content.sha256Hex() { filesRight += 1 }
        }
        let log = (try? String(contentsOfFile: work + "/daemon.log", encoding: .utf8)) ?? ""
        let pauses = log.split(separator: "\n").filter { $0.hasSuffix("[Transfer] paused") }.count
        let lastDone = completed.map(\.job.updatedAt).max().map { Int($0.timeIntervalSince(started)) } ?? 0
        let served = server.requests
        let resets = served.count
        try? await server.shutdown()

        func at(_ fraction: Double) -> (Int, Int) {
            let target = Int(elapsed * fraction)
            let s = samples.min { abs($0.seconds - target) < abs($1.seconds - target) } ?? (0, 0, 0)
            return (s.rss, s.anon)
        }
        let first = samples.first.map { ($0.rss, $0.anon) } ?? (0, 0)
        let maxRSS = samples.map(\.rss).max() ?? 0, maxAnon = samples.map(\.anon).max() ?? 0
        let ok = !died && completed.count == jobCount && filesRight == jobCount
        print("| soak | value |")
        print("|---|---|")
        print("| jobs added / completed / sha256 right (daemon and file) | \(jobCount) / \(completed.count) / \(filesRight) |")
        print("| daemon deaths (same pid \(pid) throughout) | \(died ? 1 : 0) |")
        print("| link flaps (Wi-Fi ↔ metered modem) | \(flaps) over \(Int(minutes)) min |")
        print("| fault spells (10 s each) | \(faultSpells.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")) |")
        print("| HTTP requests served | \(resets) |")
        print("| pauses (jobs stopped by the policy) | \(pauses) |")
        print("| last job completed after | \(lastDone) s (the run lasted \(Int(elapsed)) s) |")
        let (r10, a10) = at(0.1), (r50, a50) = at(0.5), (r90, a90) = at(0.9)
        print("| VmRSS first / 10% / 50% / 90% / max (MiB) | \(mib(first.0)) / \(mib(r10)) / \(mib(r50)) / \(mib(r90)) / \(mib(maxRSS)) |")
        print("| RssAnon first / 10% / 50% / 90% / max (MiB) | \(mib(first.1)) / \(mib(a10)) / \(mib(a50)) / \(mib(a90)) / \(mib(maxAnon)) |")
        print(ok ? "\nsoak: OK" : "\nsoak: FAILED")
        if daemon.isRunning { daemon.terminate() }
        return ok
    }

    static func memory(_ pid: Int32) -> (Int, Int) {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return (0, 0) }
        func field(_ name: String) -> Int {
            text.split(separator: "\n").first { $0.hasPrefix(name) }.flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") } ?? 0
        }
        return (field("VmRSS:"), field("RssAnon:"))
    }

    static func mib(_ kib: Int) -> String { String(format: "%.1f", Double(kib) / 1024) }

    static func sha256(of path: String) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        process.arguments = [path]
        let pipe = Pipe()
        process.standardOutput = pipe
        guard (try? process.run()) != nil else { return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(String(decoding: data, as: UTF8.self).prefix(64))
    }
}

struct SoakError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
