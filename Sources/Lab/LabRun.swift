import Foundation
import Links
import Synchronization

/// One `meterwise lab` run: build the topology, start the server in the internet namespace and the
/// engine in the device namespace, replay the scenario with real netlink operations while sampling the
/// device's counters, then stop everything and remove the namespaces (also on failure and cancellation).
///
/// A lab killed outright (SIGKILL) cannot clean up: its namespaces are recorded in a `LabClaim` before they
/// are created, and the next lab removes those of dead labs (and the processes in them) first, saying so.
/// The namespaces of labs still running are left alone, so labs can run side by side.
public struct LabRun: Sendable {
    /// The server's first stdout line.
    public struct Served: Sendable, Hashable, Decodable {
        public var url: String
        public var sha256: String
        public var size: Int64
    }

    public var scenario: Scenario
    public var uplinks: [LabUplink]
    public var speed: Double = 1
    /// The server's argv (run inside the internet namespace) for a host and port.
    public var serverCommand: @Sendable (_ host: String, _ port: Int) -> [String]
    /// The engine's argv (run inside the device namespace) for the served URL and its sha256.
    public var engineCommand: @Sendable (_ served: Served) -> [String]
    /// The engine gets SIGTERM after this long.
    public var timeout: Duration = .seconds(300)
    /// How often the device's counters are sampled.
    public var sampleInterval: Duration = .milliseconds(5)
    /// The namespaces are `PREFIX-dev-PID-R` and `PREFIX-net-PID-R`.
    public var namespacePrefix = "mwlab"
    /// Progress lines for people (the command prints them on stderr).
    public var log: @Sendable (String) -> Void = { _ in }

    public init(
        scenario: Scenario, uplinks: [LabUplink],
        serverCommand: @escaping @Sendable (_ host: String, _ port: Int) -> [String],
        engineCommand: @escaping @Sendable (_ served: Served) -> [String]
    ) {
        self.scenario = scenario
        self.uplinks = uplinks
        self.serverCommand = serverCommand
        self.engineCommand = engineCommand
    }

    public static let serverPort = 8080

    /// Where the lab records the namespaces it creates (`LabClaim`).
    public var claimDirectory = LabClaim.defaultDirectory

    /// Runs the lab; the namespaces are gone when it returns or throws.
    public func run() async throws -> LabReport {
        for removed in LabClaim.sweep(directory: claimDirectory) { log("lab: \(removed.message)") }
        let names = LabTopology.names(prefix: namespacePrefix)
        let claim = try LabClaim.acquire(namespaces: [names.device, names.internet], directory: claimDirectory)
        defer { claim.release() }
        let topology = try LabTopology.create(uplinks: uplinks, names: names)
        defer { topology.teardown() }
        log(
            "lab: namespaces \(topology.device.name) (device) and \(topology.internet.name) (internet); "
                + uplinks.map { uplink in
                    "\(uplink.name) \(uplink.deviceAddress) "
                        + (uplink.rateBitsPerSecond.map { "\($0 / 1000) kbit/s" } ?? "unshaped")
                }
                .joined(separator: ", "))
        let driver = ScenarioDriver(scenario: scenario, uplinks: uplinks, speed: speed)
        let plan = driver.plan()
        if let first = plan.first { try driver.apply(first, in: topology.device) }

        let serverArgv =
            ["ip", "netns", "exec", topology.internet.name]
            + serverCommand(LabTopology.serverAddress, Self.serverPort)
        return try await ChildProcess.run(serverArgv) { server in
            let served = try await Self.firstJSONLine(of: server, as: Served.self, within: .seconds(30))
            log("lab: serving \(served.url) (\(served.size) bytes, sha256 \(served.sha256.prefix(12))…)")
            try Task.checkCancellation()
            return try await download(from: served, topology: topology, driver: driver, plan: plan)
        }.value
    }

    /// Runs the engine (or `get`) against `served` while the driver replays the rest of the plan, sampling
    /// the engine namespace's counters; the report of what happened.
    func download(
        from served: Served, topology: LabTopology, driver: ScenarioDriver, plan: [ScenarioDriver.PlannedStep]
    ) async throws -> LabReport {
        let before = try InterfaceCounters.read(in: topology.device)
        let clock = ContinuousClock()
        let start = clock.now
        let record = Record(applied: plan.first.map { [.init(step: $0, appliedAt: .zero)] } ?? [])
        let names = uplinks.map(\.name)
        let (log, sampleInterval, timeout) = (self.log, self.sampleInterval, self.timeout)
        let ((lines, stderr), status) = try await ChildProcess.run(
            ["ip", "netns", "exec", topology.device.name] + engineCommand(served)
        ) { engine in
            log("lab: engine started (pid \(engine.pid)): \(engine.argv.dropFirst(4).joined(separator: " "))")
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    do {
                        _ = try await driver.replay(
                            Array(plan.dropFirst()), in: topology.device, clock: clock,
                            start: start
                        ) { step in
                            record.applied.withLock { $0.append(step) }
                            log(
                                "lab: \(Self.format(step.appliedAt)) primary \(step.step.state.primary ?? "none"), up "
                                    + step.step.state.up.sorted().joined(separator: ",")
                                    + (step.step.note.map { " — \($0)" } ?? ""))
                        }
                    } catch is CancellationError {
                    } catch {
                        record.failure.withLock { $0 = error }
                        engine.terminate()
                    }
                }
                group.addTask {
                    while !Task.isCancelled {
                        if let counters = InterfaceCounters.read(pid: engine.pid),
                            names.allSatisfy({ counters.interfaces[$0] != nil })
                        {
                            let at = start.duration(to: clock.now)
                            record.samples.withLock {
                                $0.append(
                                    .init(
                                        at: at,
                                        rx: counters.interfaces.filter { names.contains($0.key) }
                                            .mapValues(\.rx)))
                            }
                        }
                        try? await Task.sleep(for: sampleInterval)
                    }
                }
                group.addTask {
                    guard (try? await Task.sleep(for: timeout)) != nil else { return }
                    log("lab: the engine is still running after \(timeout); stopping it")
                    engine.terminate()
                }
                await engine.outputEnded()
                group.cancelAll()
                try await group.waitForAll()
            }
            try Task.checkCancellation()
            return (engine.stdoutLines, engine.stderrText)
        }
        let end = start.duration(to: clock.now)
        if let error = record.failure.withLock({ $0 }) { throw error }
        let after = try InterfaceCounters.read(in: topology.device)

        let summary = lines.last { $0.text.hasPrefix("{") }?.text
        let events = lines.filter { $0.text.hasPrefix("{") && !$0.text.contains("\"progress\"") }
            .map { (at: start.duration(to: $0.at), json: $0.text) }
        let figures = LabAnalysis.steps(
            record.applied.withLock { $0 }, samples: record.samples.withLock { $0 },
            previous: .initial(uplinks), until: end)
        return LabReport(
            scenario: scenario.name, sha256: served.sha256, size: served.size, engineExit: status,
            engineSummary: summary, engineEvents: events,
            interfaces: after.delta(since: before).filter { names.contains($0.key) },
            steps: figures, meteredPrimaryBytes: LabAnalysis.meteredPrimaryBytes(figures, uplinks: uplinks),
            duration: end, engineStderr: stderr, samples: record.samples.withLock { $0 })
    }

    /// What the run's concurrent tasks record.
    final class Record: Sendable {
        let samples = Mutex<[LabAnalysis.Sample]>([])
        let applied: Mutex<[ScenarioDriver.AppliedStep]>
        let failure = Mutex<(any Error)?>(nil)
        init(applied: [ScenarioDriver.AppliedStep]) { self.applied = Mutex(applied) }
    }

    /// The first stdout line of `child` that decodes as `T`; fails with the child's stderr when it
    /// exits first or says nothing in time.
    static func firstJSONLine<T: Decodable & Sendable>(
        of child: ChildProcess, as type: T.Type,
        within timeout: Duration
    ) async throws -> T {
        let found: T? = try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                for await line in child.lines {
                    if let value = try? JSONDecoder().decode(T.self, from: Data(line.text.utf8)) { return value }
                }
                return nil
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
        try Task.checkCancellation()
        guard let found else {
            let detail = child.stderrText.trimmingCharacters(in: .whitespacesAndNewlines)
            throw LabError(
                .childFailed,
                "`\(child.argv.joined(separator: " "))` did not print its JSON line"
                    + (detail.isEmpty ? "" : ": \(detail)"))
        }
        return found
    }

    static func format(_ duration: Duration) -> String {
        String(format: "%6.2fs", duration.inSeconds)
    }
}
