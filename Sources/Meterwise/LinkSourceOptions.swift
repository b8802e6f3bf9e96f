import ArgumentParser
import Links
import Policy

/// Where a command's links come from, as every command that reads links spells it: `--links netlink` (the
/// kernel, with the system's `--hints`) or `--links scenario` (`--scenario FILE`, replayed at `--speed`).
/// `links`, `daemon`, `demo`, `check` and `run` parse this group and resolve it with `source`, and `lab`
/// writes it for the demo it starts (`arguments`), so no two commands can read links differently.
struct LinkSourceOptions: ParsableArguments {
    /// The two backends of `LinkMonitor` a command line can name.
    enum Origin: String, ExpressibleByArgument, CaseIterable {
        case netlink
        case scenario
    }

    @Option(
        help: ArgumentHelp(
            "Where links come from: netlink (the kernel, with --hints) or scenario (--scenario FILE).",
            discussion: "Default: scenario when --scenario is given, else netlink (demo: its built-in scenario)."))
    var links: Origin?

    @Option(help: "Replay this scenario file instead of reading the kernel's links (docs/scenarios.md).")
    var scenario: String?

    @Option(help: "Scenario seconds per real second (20 plays 20 s in 1 s); for a scenario only.")
    var speed: Double = 1

    @Option(
        help: ArgumentHelp(
            "Hints joined to the kernel's links: networkmanager or none (default: networkmanager).",
            discussion:
                "networkmanager: NetworkManager and ModemManager over D-Bus, systemd-networkd's DHCP leases and "
                + "nl80211's Wi-Fi names, each when it runs. For netlink only."))
    var hints: HintChoice?

    init() {}

    /// Options as a command line gives them (for `lab`, which starts a demo with them).
    init(links: Origin?, scenario: String? = nil, speed: Double = 1, hints: HintChoice? = nil) {
        self.links = links
        self.scenario = scenario
        self.speed = speed
        self.hints = hints
    }

    /// Whether any of these options was given: `check` and `run` then decide here, as with `--local`.
    var isGiven: Bool { links != nil || scenario != nil || hints != nil || speed != 1 }

    func validate() throws {
        try ArgumentLimits.checkSpeed(speed)
        if links == .netlink, scenario != nil {
            throw ValidationError("--scenario replays a file, --links netlink reads the kernel: give one of them")
        }
    }

    /// The source named: a scenario when `--links scenario` or `--scenario FILE` says so (or, with neither,
    /// when `fallback` gives a built-in scenario: demo's), else the kernel. `--links scenario` without a file
    /// replays `fallback`, and is a `ValidationError` without one; a scenario file with problems throws them
    /// (`file:line:column` and the fix).
    func resolve(fallback: (() throws -> Scenario)? = nil) throws -> LinkSource {
        // Which one first: the checks below depend on the command's default (demo's is a scenario).
        let replays = links == .scenario || scenario != nil || links == nil && fallback != nil
        if replays, hints != nil {
            throw ValidationError(
                "--hints join the kernel's links; a scenario carries its own (drop --hints, or use --links netlink)")
        }
        if !replays, speed != 1 { throw ValidationError("--speed only applies to a scenario (--scenario FILE)") }
        guard replays else { return .kernel(hints: hints ?? .networkmanager) }
        if let scenario { return .scenario(try ScenarioParser.load(path: scenario), speed: speed) }
        guard let fallback else { throw ValidationError("--links scenario needs --scenario FILE") }
        return .scenario(try fallback(), speed: speed)
    }

    /// `resolve`, for the commands whose bad scenario file exits 65 (EX_DATAERR) after its problems are
    /// printed, as `lab` does: the command line was right, the file is not, so no usage text follows.
    func source(fallback: (() throws -> Scenario)? = nil) throws -> LinkSource {
        do {
            return try resolve(fallback: fallback)
        } catch let error as ValidationError {
            throw error
        } catch let error as ExitCode {
            throw error
        } catch {
            Output.error("Error: \(error)")
            throw ExitCode(65)
        }
    }

    /// The policy (`--policy`, or the usual places) and these links, for `check` and `run` deciding here: a
    /// policy or scenario file with problems is `failure`'s (their exit 2); bad options stay a usage error.
    func localInputs(policy: String?, failure: (String) -> ExitCode) throws -> (PolicySet, LinkSource) {
        do {
            return (try PolicyLocator.current(explicit: policy).load(), try resolve())
        } catch let error as ValidationError {
            throw error
        } catch {
            throw failure("\(error)")
        }
    }

    /// The options as command-line arguments.
    var arguments: [String] {
        var arguments: [String] = []
        if let links { arguments += ["--links", links.rawValue] }
        if let scenario { arguments += ["--scenario", scenario] }
        if speed != 1 { arguments += ["--speed", "\(speed)"] }
        if let hints { arguments += ["--hints", hints.rawValue] }
        return arguments
    }
}
