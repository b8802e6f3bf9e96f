import ArgumentParser
import Foundation
import Links
import Logging
import NetlinkLinks
import SystemHints

/// `meterwise links`: what the link monitor sees, once or as it changes.
struct LinksCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "links",
        abstract: "Show network links, default routes and the primary uplink.",
        discussion: """
            Reads the kernel over netlink (libnl), or replays a scenario file with --scenario. \
            With --watch, prints one line per change until interrupted (or the scenario ends).
            """
    )

    @Flag(help: "Print JSON: one document, or with --watch one object per line.")
    var json = false

    @Flag(help: "Keep running and print every change of the snapshot.")
    var watch = false

    @Option(help: "Replay this scenario file instead of reading the kernel.")
    var scenario: String?

    @Option(help: "Replay speed for --scenario (20 plays 20 s in 1 s).")
    var speed: Double = 1

    @Option(help: "Hints beyond the kernel: networkmanager (NetworkManager and ModemManager over D-Bus, networkd's DHCP leases, when they run) or none.")
    var hints: HintChoice = .networkmanager

    func validate() throws {
        try ArgumentLimits.checkSpeed(speed)
        if scenario == nil && speed != 1 { throw ValidationError("--speed only applies with --scenario FILE") }
    }

    func run() async throws {
        let monitor = try LinkSource.monitor(scenario: scenario, speed: speed, hints: hints)
        var previous: LinkSnapshot?
        for try await snapshot in monitor.snapshots() {
            if !watch {
                Output.line(json ? SnapshotFormat.json(snapshot) : SnapshotFormat.table(snapshot, scenario: scenario))
                return
            }
            let line = json
                ? SnapshotFormat.json(snapshot, at: Date())
                : SnapshotFormat.changeLine(snapshot, previous: previous, at: Date())
            Output.line(line)
            previous = snapshot
        }
    }
}

/// Which sources of hints beyond the kernel join the kernel's links: `networkmanager` is every system
/// source (NetworkManager and ModemManager over D-Bus, systemd-networkd's DHCP leases), each when it runs.
enum HintChoice: String, ExpressibleByArgument, CaseIterable {
    case networkmanager
    case none
}

/// Picks the link monitor backend from the command line.
enum LinkSource {
    static func monitor(scenario: String?, speed: Double, hints: HintChoice) throws -> any LinkMonitor {
        guard let scenario else { return kernel(hints: hints) }
        return ScenarioLinkMonitor(scenario: try loadScenario(scenario), clock: ContinuousClock(), speed: speed)
    }

    /// The kernel's links (netlink), with the hint sources' facts (NetworkManager, nl80211, networkd, ModemManager)
    /// joined unless `hints` is `.none`.
    static func kernel(hints: HintChoice, logger: Logger = Logger(label: "meterwise.links")) -> any LinkMonitor {
        let netlink = NetlinkLinkMonitor(logger: logger)
        switch hints {
        case .none: return netlink
        case .networkmanager:
            return HintedLinkMonitor(
                base: netlink,
                sources: [
                    // NetworkManager first: its SSID and BSSID win; nl80211 fills them where it does not run.
                    NetworkManagerHints(logger: logger), WirelessHints(logger: logger),
                    NetworkdLeaseHints(logger: logger), ModemManagerHints(logger: logger),
                ])
        }
    }

    /// A scenario file. One with problems prints each (`file:line:column` and the fix) and exits 65
    /// (EX_DATAERR), as `lab` does: the command line was right, the file is not, so no usage text follows.
    static func loadScenario(_ path: String) throws -> Scenario {
        do {
            return try ScenarioParser.load(path: path)
        } catch {
            Output.error("Error: \(error)")
            throw ExitCode(65)
        }
    }
}
