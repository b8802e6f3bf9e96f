import ArgumentParser
import Links
import Logging
import NetlinkLinks
import SystemHints

/// Which sources of hints beyond the kernel join the kernel's links: `networkmanager` is every system
/// source (NetworkManager and ModemManager over D-Bus, systemd-networkd's DHCP leases and the captive portal
/// API they name, nl80211, UPower, power-profiles-daemon), each when it runs.
enum HintChoice: String, ExpressibleByArgument, CaseIterable {
    case networkmanager
    case none
}

/// A command's link source, resolved from `LinkSourceOptions`: the one place that builds a `LinkMonitor`.
enum LinkSource {
    /// The kernel's links (netlink), with the system's hints unless `.none`.
    case kernel(hints: HintChoice)
    /// A scenario replayed `speed` times faster than real time.
    case scenario(Scenario, speed: Double)

    var isKernel: Bool {
        if case .kernel = self { return true }
        return false
    }

    /// `netlink` or `scenario`, as `--links` says it.
    var name: String { (isKernel ? LinkSourceOptions.Origin.netlink : .scenario).rawValue }

    var scenario: Scenario? {
        if case .scenario(let scenario, _) = self { return scenario }
        return nil
    }

    /// The clock the command runs on: the scenario's time at its speed, or real time.
    func clock() -> ScaledClock {
        if case .scenario(_, let speed) = self { return ScaledClock(speed: speed) }
        return ScaledClock()
    }

    /// The monitor of this source; a scenario plays on `clock` (from `clock()`, shared with whatever else runs
    /// on the scenario's time).
    func monitor(clock: ScaledClock, logger: Logger = Logger(label: "meterwise.links")) -> any LinkMonitor {
        switch self {
        case .scenario(let scenario, _):
            return ScenarioLinkMonitor(scenario: scenario, clock: clock)
        case .kernel(let hints):
            let netlink = NetlinkLinkMonitor(logger: logger)
            guard hints == .networkmanager else { return netlink }
            return HintedLinkMonitor(
                base: netlink,
                sources: [
                    // NetworkManager first: its SSID and BSSID win; nl80211 fills them where it does not run.
                    // The captive portal API a DHCP lease names (RFC 8910), from NetworkManager or networkd, is
                    // asked (RFC 8908).
                    PortalAPIHints(
                        base: NetworkManagerHints(logger: logger), query: PortalAPIQuery.live(), logger: logger),
                    WirelessHints(logger: logger),
                    PortalAPIHints(
                        base: NetworkdLeaseHints(logger: logger), query: PortalAPIQuery.live(), logger: logger),
                    ModemManagerHints(logger: logger),
                    PowerHints(.upower, logger: logger), PowerHints(.powerProfiles, logger: logger),
                ])
        }
    }

    /// The links now: the monitor's first snapshot (links, addresses, default routes, the primary uplink,
    /// the hints), then the monitor stops.
    func current() async throws -> LinkSnapshot {
        for try await snapshot in monitor(clock: clock()).snapshots() { return snapshot }
        throw NetlinkError(.dump, "the link monitor ended before its first snapshot")
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
