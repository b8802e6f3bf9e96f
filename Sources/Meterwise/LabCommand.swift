import ArgumentParser
import ConfigKit
import Foundation
import Lab
import Links
import Policy

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `meterwise lab`: the scenario in the kernel, with the engine and its real libnl monitor (root).
struct LabCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lab",
        abstract: """
            Replay a scenario in network namespaces with real links; compare the kernel's byte counts with \
            the engine's (root).
            """,
        discussion: """
            Builds a "device" namespace with one veth per scenario link (wlan0 fast, wwan0 slow through tc tbf) \
            to an "internet" namespace serving a generated file on 10.77.100.1:8080, runs the engine in the \
            device namespace (`meterwise demo --links netlink --hints none`), replays the scenario with ip link/route \
            operations, then prints the bytes received per interface next to the engine's own accounting. \
            The namespaces are removed at the end, on failure and on Ctrl-C; those of a lab killed outright \
            (SIGKILL) are removed by the next lab, with the processes left in them, and it says so (labs record \
            their namespaces in /run/meterwise-lab, or METERWISE_LAB_DIR). See docs/lab.md.
            """
    )

    enum Downloader: String, ExpressibleByArgument, CaseIterable {
        /// `meterwise demo --links netlink --hints none`: the engine.
        case engine
        /// `meterwise get`: the plain downloader, policy-blind (proves the lab without the engine).
        case get
    }

    @Argument(help: "The scenario file (default: the built-in commute scenario, as `meterwise demo` plays it).")
    var scenario: String?

    @Flag(help: "Print the summary as one JSON object on the last stdout line.")
    var json = false

    @Option(help: "The size of the served file, e.g. 64MiB.")
    var size = "64MiB"

    @Option(help: "Scenario seconds per real second (2 replays twice as fast).")
    var speed = 1.0

    @Option(help: ArgumentHelp(PolicyOption.help))
    var policy: String?

    @Option(help: "Who downloads inside the device namespace: engine (meterwise demo) or get (meterwise get).")
    var downloader: Downloader = .engine

    @Option(
        help: ArgumentHelp(
            "Run this command as the downloader instead, split on spaces; "
                + "{url}, {sha256}, {output} and {policy} are replaced.",
            valueName: "command"))
    var engineCommand: String?

    @Option(help: "The rate of fast links (wlan, ethernet), e.g. 48mbit; 0 leaves them unshaped.")
    var fastRate = "48mbit"

    @Option(help: "The rate of slow links (wwan, ppp, tethering), e.g. 3mbit; 0 leaves them unshaped.")
    var slowRate = "3mbit"

    @Option(help: "Stop the downloader after this many seconds.")
    var timeout = 300

    func validate() throws {
        guard let bytes = Units.parseBytes(size), bytes > 0 else {
            throw ValidationError("--size \(size) is not a size; \(Units.bytesHint).")
        }
        guard speed > 0, speed <= 100 else { throw ValidationError("--speed must be above 0 and at most 100.") }
        for (flag, value) in [("--fast-rate", fastRate), ("--slow-rate", slowRate)] where value != "0" {
            guard TrafficShaper.parseRate(value) != nil else {
                throw ValidationError(
                    "\(flag) \(value) is not a rate; write it as tc does, e.g. 48mbit, 3mbit or 500kbit.")
            }
        }
        guard timeout > 0 else { throw ValidationError("--timeout must be a positive number of seconds.") }
    }

    /// A lab's files (the served file, the download, its partial) live in TEMP/meterwise-lab-PID, removed
    /// when the lab ends however it ends, except by SIGKILL.
    static let workDirectoryPrefix = "meterwise-lab-"

    /// Removes the work directories in `temporary` of labs that died (SIGKILL) and returns their names and
    /// pids: a directory of this user (not a symlink) whose pid no process has. A live lab's, or one whose
    /// pid another process took, is left alone.
    static func removeStaleWorkDirectories(in temporary: String) -> [(name: String, pid: Int32)] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: temporary) else { return [] }
        var removed: [(name: String, pid: Int32)] = []
        for name in names.sorted() where name.hasPrefix(workDirectoryPrefix) {
            guard let pid = Int32(name.dropFirst(workDirectoryPrefix.count)), pid > 0, pid != getpid() else { continue }
            var stats = stat()
            let path = temporary + "/" + name
            guard lstat(path, &stats) == 0, stats.st_mode & S_IFMT == S_IFDIR, stats.st_uid == geteuid() else {
                continue
            }
            guard kill(pid, 0) != 0, errno == ESRCH else { continue }
            if (try? FileManager.default.removeItem(atPath: path)) != nil { removed.append((name, pid)) }
        }
        return removed
    }

    func run() async throws {
        guard getuid() == 0 else {
            Output.error(
                "meterwise lab: needs root to create network namespaces; run it with sudo: "
                    + "sudo \(CommandLine.arguments[0]) lab" + (scenario.map { " \($0)" } ?? ""))
            throw ExitCode(77)
        }
        if let reason = Netns.unavailableReason() {
            Output.error("meterwise lab: \(reason)")
            throw ExitCode(69)
        }
        if !Command.exists("tc") {
            Output.error("meterwise lab: the `tc` command is missing; install iproute2")
            throw ExitCode(69)
        }
        let loaded: Scenario
        do {
            // Without a file, the built-in one: an installed binary has no scenarios folder beside it.
            if let scenario {
                loaded = try ScenarioParser.load(path: scenario)
            } else {
                loaded = try DemoDefaults.builtInScenario()
            }
        } catch let error as LinksError {
            Output.error("meterwise lab: \(error.message)")
            throw ExitCode(65)
        }
        if downloader == .engine, engineCommand == nil {
            // As daemon and demo: a policy with errors (or none at the path given) exits 78, EX_CONFIG.
            let source = PolicyLocator.current(explicit: policy)
            _ = try PolicyOption.load(source)
            Output.error("meterwise lab: policy \(source)")
        }
        let uplinks = try LabTopology.uplinks(for: loaded, fastRate: rate(fastRate), slowRate: rate(slowRate))
        let temporary = FileManager.default.temporaryDirectory.path
        for (name, pid) in Self.removeStaleWorkDirectories(in: temporary) {
            Output.error("lab: removed \(temporary)/\(name) left by a lab that died (pid \(pid))")
        }
        let workDirectory = temporary + "/" + Self.workDirectoryPrefix + "\(getpid())"
        try FileManager.default.createDirectory(atPath: workDirectory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: workDirectory) }

        var lab = LabRun(
            scenario: loaded, uplinks: uplinks,
            serverCommand: serverCommand, engineCommand: downloaderCommand(workDirectory: workDirectory))
        lab.speed = speed
        lab.timeout = .seconds(timeout)
        lab.log = { Output.error($0) }
        let configured = lab

        let signals = SignalStream(signals: [SIGINT, SIGTERM])
        defer { signals.stop() }
        let stream = signals.stream
        enum Ending: Sendable {
            case report(Result<LabReport, any Error>)
            case signal(Int32)
        }
        let ending: Ending = await withTaskGroup(of: Ending?.self) { group in
            group.addTask {
                do {
                    return .report(.success(try await configured.run()))
                } catch {
                    return .report(.failure(error))
                }
            }
            group.addTask {
                for await number in stream { return .signal(number) }
                return nil
            }
            var first: Ending?
            while first == nil, let next = await group.next() { first = next }
            group.cancelAll()
            await group.waitForAll()  // the lab's own cleanup runs before the process exits
            return first!
        }
        switch ending {
        case .signal(let number):
            Output.error("meterwise lab: stopped by signal \(number); the namespaces are removed")
            throw ExitCode(128 + number)
        case .report(.failure(let error as LabError)):
            Output.error("meterwise lab: \(error.message)")
            throw ExitCode(1)
        case .report(.failure(let error)):
            Output.error("meterwise lab: \(error)")
            throw ExitCode(1)
        case .report(.success(let report)):
            try render(report, uplinks: uplinks)
        }
    }

    func rate(_ text: String) -> Int64? { text == "0" ? nil : TrafficShaper.parseRate(text) }

    /// The executable itself, for the server and engine children.
    static var selfPath: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    var serverCommand: @Sendable (String, Int) -> [String] {
        let size = self.size
        return { host, port in [Self.selfPath, "serve", "--host", host, "--port", "\(port)", "--size", size] }
    }

    func downloaderCommand(workDirectory: String) -> @Sendable (LabRun.Served) -> [String] {
        let output = workDirectory + "/download.bin"
        // The engine child resolves the policy as this process did; an explicit path is made absolute.
        let policyArguments =
            PolicyLocator.current(explicit: policy).path
            .map { ["--policy", URL(fileURLWithPath: $0).standardizedFileURL.path] } ?? []
        let (downloader, template, size) = (self.downloader, self.engineCommand, self.size)
        return { served in
            if let template {
                return template.split(separator: " ").map {
                    $0.replacingOccurrences(of: "{url}", with: served.url)
                        .replacingOccurrences(of: "{sha256}", with: served.sha256)
                        .replacingOccurrences(of: "{output}", with: output)
                        .replacingOccurrences(of: "{policy}", with: policyArguments.last ?? "")
                }
            }
            switch downloader {
            case .engine:
                return [Self.selfPath, "demo"] + Self.demoLinks.arguments
                    + ["--url", served.url, "--sha256", served.sha256, "--size", size, "--json", "--output", output]
                    + policyArguments
            case .get:
                return [Self.selfPath, "get", served.url, "-o", output, "--sha256", served.sha256, "--json", "--force"]
            }
        }
    }

    /// The demo's links inside the device namespace: the kernel's, without the system's hints (NetworkManager,
    /// networkd and ModemManager describe the host's devices, not the namespace's veths, which may share a name
    /// with one of them).
    static let demoLinks = LinkSourceOptions(links: .netlink, hints: HintChoice.none)

    func render(_ report: LabReport, uplinks: [LabUplink]) throws {
        let failed = report.engineExit != 0 || report.sha256OK == false
        if report.engineExit != 0 {
            let detail = report.engineStderr.trimmingCharacters(in: .whitespacesAndNewlines)
            Output.error(
                "meterwise lab: the downloader exited with status \(report.engineExit)"
                    + (detail.isEmpty ? "" : ":\n\(detail)"))
        }
        if json {
            let data = try JSONSerialization.data(
                withJSONObject: report.jsonObject(),
                options: [.sortedKeys, .withoutEscapingSlashes])
            Output.line(String(decoding: data, as: UTF8.self))
        } else {
            Output.line(LabTable.render(report, uplinks: uplinks))
        }
        if failed { throw ExitCode(1) }
    }
}
