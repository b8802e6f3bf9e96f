import ArgumentParser
import ConfigKit
import Foundation
import Links
import Policy

/// `meterwise policy check|explain`: validate policy files, and say what a job would do and why.
struct PolicyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "policy",
        abstract: "Check and explain policies.",
        subcommands: [Check.self, Explain.self]
    )

    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Validate policies; exit 1 listing every problem.",
            discussion: """
                Each FILE is checked as the standalone policy it is; a DIRECTORY as the drop-in set it is \
                (its *.yaml files merged in lexical order). With no PATH, checks the policy the daemon would \
                use: $XDG_CONFIG_HOME/meterwise/policies.d (users) or /etc/meterwise/policies.d when present, \
                else the built-in default (policies/default.yaml).
                """)

        @Argument(help: "Policy files or drop-in directories.")
        var paths: [String] = []

        func run() async throws {
            let sources =
                paths.isEmpty
                ? [PolicyLocator.current(explicit: nil)] : paths.map { PolicySource(path: $0, origin: .explicit) }
            var failed = false
            for source in sources {
                do {
                    let policy = try source.load()
                    let networks = policy.networks.count
                    let rules = policy.rules.count
                    let files = policy.files.count
                    Output.line(
                        "\(source): OK (\(files) file\(files == 1 ? "" : "s"), "
                            + "\(networks) network rule\(networks == 1 ? "" : "s"), "
                            + "\(rules) rule\(rules == 1 ? "" : "s"))")
                } catch {
                    Output.error(error.description)
                    failed = true
                }
            }
            if failed { throw ExitCode(1) }
        }
    }

    struct Explain: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show what a job would do now, the rule that decides, and why earlier rules did not match.",
            discussion: """
                Links come from a scenario at an instant (--scenario FILE --at 12s) or from this machine; \
                --link NAME treats that link as the primary uplink. Budgets are explained as unused.
                """)

        @Option(help: ArgumentHelp(PolicyOption.help))
        var policy: String?
        @Option(help: "Explain as if this link were the primary uplink.")
        var link: String?
        @Option(help: "A scenario file to take the links from (see docs/scenarios.md).")
        var scenario: String?
        @Option(help: "The instant of the scenario, e.g. 12s (default 0s).")
        var at: String?
        @Option(help: "The job's size, e.g. 700MiB.")
        var size: String?
        @Option(help: "Local time of day HH:MM (today), or an ISO 8601 instant; default now.")
        var time: String?
        @Option(help: "The job's priority.")
        var priority: Int = 0
        @Option(name: .customLong("tag"), help: "A job tag (repeatable).")
        var tags: [String] = []
        @Flag(help: "The job allows metered links.")
        var allowMetered = false
        @Flag(help: "The job allows roaming links.")
        var allowRoaming = false
        @Flag(help: "Print JSON: {\"action\", \"rule\", \"rate\", \"reasons\", ...}.")
        var json = false

        func validate() throws {
            if at != nil, scenario == nil { throw ValidationError("--at needs --scenario FILE") }
            if let at, Units.parseDuration(at) == nil {
                throw ValidationError("bad --at `\(at)`: \(Units.durationHint)")
            }
            if let size, Units.parseBytes(size) == nil {
                throw ValidationError("bad --size `\(size)`: \(Units.bytesHint)")
            }
            if let time, Self.instant(time) == nil {
                throw ValidationError("bad --time `\(time)`: write HH:MM (local, today) or 2026-11-22T02:30:00Z")
            }
        }

        static func instant(_ text: String) -> Date? {
            if let minutes = TimeWindow.minutes(text, allow24: false) {
                var calendar = Calendar(identifier: .gregorian)
                calendar.timeZone = .current
                let day = calendar.dateComponents([.year, .month, .day], from: Date())
                return calendar.date(
                    from: DateComponents(
                        year: day.year, month: day.month, day: day.day,
                        hour: minutes / 60, minute: minutes % 60))
            }
            return ISO8601DateFormatter().date(from: text)
        }

        func run() async throws {
            let source = PolicyLocator.current(explicit: policy)
            let policySet: PolicySet
            do { policySet = try source.load() } catch {
                FileHandle.standardError.write(Data((error.description + "\n").utf8))
                throw ExitCode(1)
            }
            var snapshot: LinkSnapshot
            if let scenario {
                let loaded = try LinkSource.loadScenario(scenario)
                let at = at.flatMap(Units.parseDuration) ?? .zero
                snapshot = loaded.timeline().last { $0.at <= at }?.snapshot ?? .empty
            } else {
                snapshot = try await LinkSource.kernel(hints: .networkmanager).current()
                if link == nil, snapshot.primary == nil,
                    let first = snapshot.links.first(where: { $0.isUsable && $0.kind != .loopback })
                {
                    snapshot = Self.making(first.name, primaryOf: snapshot)
                }
            }
            if let link {
                // Not a usage error (the command line is well formed; the machine or scenario has no such
                // link): the message without usage text, exit 1 like explain's other failures.
                guard snapshot.link(named: link) != nil else {
                    let place = scenario.map { "in \($0) at \(at ?? "0s")" } ?? "on this machine"
                    Output.error(
                        "Error: no link named \(link) \(place); known: "
                            + snapshot.links.map(\.name).joined(separator: ", "))
                    throw ExitCode(1)
                }
                snapshot = Self.making(link, primaryOf: snapshot)
            }
            let job = JobInfo(
                id: "explain", size: size.flatMap(Units.parseBytes), priority: priority, tags: tags,
                allowMetered: allowMetered, allowRoaming: allowRoaming ? true : nil)
            let now = time.flatMap(Self.instant) ?? Date()
            let explanation = policySet.explain(
                job: job, snapshot: snapshot, usage: Usage(), now: now, timeZone: .current)
            if json {
                Output.line(explanation.json(policy: source.description))
            } else {
                Output.line("policy: \(source)\n" + explanation.text)
            }
        }

        /// The snapshot with `name` up and holding the best default route, so the rules look at it.
        static func making(_ name: String, primaryOf snapshot: LinkSnapshot) -> LinkSnapshot {
            var links = snapshot.links
            var routes = snapshot.defaultRoutes.filter { $0.link != name }
            if let i = links.firstIndex(where: { $0.name == name }) {
                links[i].up = true
                links[i].running = true
                routes.append(DefaultRoute(family: .ipv4, linkIndex: links[i].index, link: name, metric: 0))
            }
            return LinkSnapshot(
                links: links, defaultRoutes: routes, sequence: snapshot.sequence, timestamp: snapshot.timestamp)
        }
    }
}
