import Foundation
import Lab
import Links
import TestSupport
import Testing

/// Kernel tests (root): each builds its own lab topology and removes it after. Where namespaces cannot
/// be used they print `SKIPPED <test>: <reason>` on stderr and pass.
@Suite(.needsKernel, .needsBinary) struct LabKernelTests {
    static let twoLinks = """
        name: two
        links:
          wlan0: { kind: wlan }
          wwan0: { kind: wwan }
        steps:
          - { at: 0s, up: [wlan0, wwan0], primary: PRIMARY }
        """

    /// A topology with wlan0 at 48 Mbit/s and wwan0 at 3 Mbit/s, the first step of `yaml` applied, and
    /// `meterwise serve` running in the internet namespace.
    func withLab(
        _ name: String, primary: String = "wlan0", size: String = "512KiB",
        _ body: (LabTopology, LabRun.Served) async throws -> Void
    ) async throws {
        let scenario = try ScenarioParser.parse(
            Self.twoLinks.replacingOccurrences(of: "PRIMARY", with: primary),
            file: "two.yaml")
        let uplinks = try LabTopology.uplinks(for: scenario)
        let topology = try LabTopology.create(uplinks: uplinks, prefix: "mwlabtest")
        defer { topology.teardown() }
        let driver = ScenarioDriver(scenario: scenario, uplinks: uplinks)
        try driver.apply(driver.plan()[0], in: topology.device)
        _ = try await ChildProcess.run(
            [
                "ip", "netns", "exec", topology.internet.name, RepoPaths.binary, "serve",
                "--host", LabTopology.serverAddress, "--port", "8080", "--size", size,
            ]
        ) { server in
            var served: LabRun.Served?
            for await line in server.lines {
                served = try? JSONDecoder().decode(LabRun.Served.self, from: Data(line.text.utf8))
                if served != nil { break }
            }
            let info = try #require(served, "serve printed no JSON line: \(server.stderrText)")
            try await body(topology, info)
        }
    }

    /// `curl` in the device namespace; returns (bytes, seconds).
    func fetch(_ topology: LabTopology, _ url: String, from source: String? = nil) throws -> (Int64, Double) {
        var argv = ["curl", "-sS", "-o", "/dev/null", "-w", "%{size_download} %{time_total}"]
        if let source { argv += ["--interface", source] }
        let out = try topology.device.exec(argv + [url]).split(separator: " ")
        return (Int64(out.first ?? "") ?? -1, Double(out.last ?? "") ?? -1)
    }

    func rx(_ topology: LabTopology) throws -> [String: Int64] {
        try InterfaceCounters.read(in: topology.device).interfaces.mapValues(\.rx)
    }

    @Test func wwanIsSlowerThanWlan() async throws {
        try await withLab("wwanIsSlowerThanWlan") { topology, served in
            let wlan = try #require(topology.uplink(named: "wlan0"))
            let wwan = try #require(topology.uplink(named: "wwan0"))
            let (wlanBytes, wlanTime) = try fetch(topology, served.url, from: wlan.deviceAddress)
            let (wwanBytes, wwanTime) = try fetch(topology, served.url, from: wwan.deviceAddress)
            #expect(wlanBytes == served.size && wwanBytes == served.size)
            // 512 KiB: about 0.1 s at 48 Mbit/s, about 1.4 s at 3 Mbit/s.
            #expect(wwanTime > 1.0, "wwan0 took \(wwanTime) s")
            #expect(wwanTime > 4 * wlanTime, "wlan0 \(wlanTime) s, wwan0 \(wwanTime) s")
        }
    }

    @Test func socketBoundToWlanLeavesViaWlanWhileWwanIsPrimary() async throws {
        try await withLab("socketBoundToWlanLeavesViaWlanWhileWwanIsPrimary", primary: "wwan0", size: "256KiB") {
            topology, served in
            let before = try rx(topology)
            let (bytes, _) = try fetch(topology, served.url, from: topology.uplink(named: "wlan0")!.deviceAddress)
            let after = try rx(topology)
            #expect(bytes == served.size)
            #expect(after["wlan0"]! - before["wlan0"]! >= served.size)
            #expect(after["wwan0"]! - before["wwan0"]! < 4096, "bytes leaked onto wwan0")
            // Unbound, the same fetch takes the primary: wwan0.
            let (unbound, _) = try fetch(topology, served.url)
            let last = try rx(topology)
            #expect(unbound == served.size)
            #expect(last["wwan0"]! - after["wwan0"]! >= served.size)
            #expect(last["wlan0"]! - after["wlan0"]! < 4096)
        }
    }

    @Test func driverReplaysScenarioIntoKernelRoutes() async throws {
        for name in ["commute", "dual-uplink", "flapping"] {
            let scenario = try ScenarioParser.load(path: RepoPaths.file("docs/scenarios/\(name).yaml"))
            let uplinks = try LabTopology.uplinks(for: scenario)
            let topology = try LabTopology.create(uplinks: uplinks, prefix: "mwlabtest")
            defer { topology.teardown() }
            let driver = ScenarioDriver(scenario: scenario, uplinks: uplinks)
            for step in driver.plan() {
                try driver.apply(step, in: topology.device)
                #expect(try kernelState(topology) == step.state, "\(name) step \(step.index)")
                for uplink in uplinks where step.state.up.contains(uplink.name) {
                    let table = try topology.device.ip("route", "show", "table", "\(uplink.table)")
                    #expect(
                        table.contains("default via \(uplink.gateway) dev \(uplink.name)"),
                        "\(name) step \(step.index)")
                }
            }
        }
    }

    /// The device namespace's links and main-table default routes, as a `RouteState`.
    func kernelState(_ topology: LabTopology) throws -> RouteState {
        var up: Set<String> = []
        for uplink in topology.uplinks {
            let flags = try topology.device.ip("-o", "link", "show", uplink.name)
            if flags.contains(",UP") || flags.contains("<UP") { up.insert(uplink.name) }
        }
        var metrics: [String: Int] = [:]
        for line in try topology.device.ip("route", "show", "default").split(separator: "\n") {
            let words = line.split(separator: " ").map(String.init)
            guard let dev = words.firstIndex(of: "dev"), let metric = words.firstIndex(of: "metric") else { continue }
            metrics[words[dev + 1]] = Int(words[metric + 1])
        }
        return RouteState(up: up, metrics: metrics)
    }

    @Test func teardownLeavesNoNamespace() throws {
        let topology = try LabTopology.create(uplinks: RoutePlanTests.uplinks, prefix: "mwlabtest")
        let listed = try Command.run(["ip", "netns", "list"])
        #expect(listed.contains(topology.device.name) && listed.contains(topology.internet.name))
        topology.teardown()
        let after = try Command.run(["ip", "netns", "list"])
        #expect(!after.contains(topology.device.name) && !after.contains(topology.internet.name))
    }

    @Test func labRunWithGetReportsKernelCountersAndCleansUp() async throws {
        let scenario = try ScenarioParser.parse(
            """
            name: short
            links:
              wlan0: { kind: wlan }
              wwan0: { kind: wwan }
            steps:
              - { at: 0s, up: [wlan0, wwan0], primary: wlan0 }
              - { at: 300ms, primary: wlan0, note: "nothing changes" }
            """, file: "short.yaml")
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("mwlabtest-\(getpid()).bin").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let binary = RepoPaths.binary
        var lab = LabRun(
            scenario: scenario, uplinks: try LabTopology.uplinks(for: scenario),
            serverCommand: { [binary, "serve", "--host", $0, "--port", "\($1)", "--size", "4MiB"] },
            engineCommand: {
                [binary, "get", $0.url, "-o", output, "--sha256", $0.sha256, "--json", "--force"]
            })
        lab.timeout = .seconds(30)
        lab.namespacePrefix = "mwlabget"
        let report = try await lab.run()
        #expect(report.engineExit == 0, "\(report.engineStderr)")
        #expect(report.sha256OK == true)
        #expect(report.engineBytes == ["total": 4 << 20])
        #expect(report.interfaces["wlan0"]!.rx >= 4 << 20)
        #expect(report.interfaces["wwan0"]!.rx < 16 << 10)
        #expect(report.steps.count == 2)
        let listed = try Command.run(["ip", "netns", "list"])
        #expect(!listed.contains("mwlabget-"))
    }

    @Test func cancelledLabRunStopsItsChildrenAndRemovesNamespaces() async throws {
        let scenario = try ScenarioParser.parse(
            Self.twoLinks.replacingOccurrences(of: "PRIMARY", with: "wlan0"),
            file: "two.yaml")
        // A "server" that prints its line and sleeps, an "engine" that says it started and sleeps: only
        // cancellation ends them.
        let marker = FileManager.default.temporaryDirectory.appendingPathComponent("mwlab-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: marker) }
        var lab = LabRun(
            scenario: scenario, uplinks: try LabTopology.uplinks(for: scenario),
            serverCommand: { _, _ in
                ["sh", "-c", #"echo '{"url":"u","sha256":"s","size":1}'; exec sleep 60"#]
            },
            engineCommand: { _ in ["sh", "-c", "touch '\(marker)'; exec sleep 60"] })
        lab.timeout = .seconds(60)
        lab.namespacePrefix = "mwlabcancel"
        let run = Task { try await lab.run() }
        // Cancelled once both children run (the engine starts after the server's line), not after a guess.
        #expect(
            await eventually(timeout: .seconds(30)) { FileManager.default.fileExists(atPath: marker) },
            "the engine command did not start")
        let cancelled = ContinuousClock.now
        run.cancel()
        _ = try? await run.value
        // SIGTERM ends both sleeps at once; the rest is `ip netns del` (slow on a loaded machine).
        #expect(ContinuousClock.now - cancelled < .seconds(6))
        let listed = try Command.run(["ip", "netns", "list"])
        #expect(!listed.contains("mwlabcancel-"))
    }
}
