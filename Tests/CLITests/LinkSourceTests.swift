import Foundation
import TestSupport
import Testing

/// One link-source resolver: `links`, `daemon`, `demo`, `check` and `run` take the same options and read them
/// the same way; `check` and `run` decide here with the decision loop over a scenario, no daemon and no root.
@Suite(.needsBinary) struct LinkSourceTests {
    static let commute = RepoPaths.file("docs/scenarios/commute.yaml")
    static let policy = RepoPaths.file("policies/default.yaml")

    /// How each command is started with extra options (run needs a command; daemon a state it may not write).
    static func command(_ name: String) -> [String] {
        switch name {
        case "run": return ["run", "--policy", policy]
        case "check": return ["check", "--policy", policy]
        default: return [name]
        }
    }

    static func run(_ name: String, _ options: [String]) throws -> BinaryRun {
        try BinaryRun.run(command(name) + options + (name == "run" ? ["--", "true"] : []))
    }

    @Test(arguments: ["links", "daemon", "demo", "check", "run"])
    func contradictoryLinkOptionsAreTheSameUsageErrorEverywhere(_ name: String) throws {
        for (options, words) in [
            (["--links", "netlink", "--scenario", Self.commute], "give one of them"),
            (["--scenario", Self.commute, "--hints", "none"], "--hints join the kernel's links"),
            (["--links", "netlink", "--speed", "4"], "--speed only applies to a scenario"),
            (["--links", "wifi"], "--links"),
        ] {
            let run = try Self.run(name, options)
            #expect(run.status == 64, "\(name) \(options): \(run.status) \(run.stderr)")
            #expect(run.stderr.contains(words), "\(name) \(options): \(run.stderr)")
        }
    }

    /// `--links scenario` names no file: demo replays its built-in commute; the others say what is missing.
    @Test func aScenarioWithoutAFileIsDemosBuiltInAndAnErrorElsewhere() throws {
        for name in ["links", "daemon", "check", "run"] {
            let run = try Self.run(name, ["--links", "scenario"])
            #expect(run.status == 64, "\(name): \(run.stderr)")
            #expect(run.stderr.contains("--links scenario needs --scenario FILE"), "\(name): \(run.stderr)")
        }
        let demo = try BinaryRun.run(["demo", "--links", "scenario", "--json", "--timeout", "1"])
        #expect(demo.stdout.contains("\"links\":\"scenario\""), "\(demo.stdout)")
    }

    /// A scenario file with problems: exit 65 for links, daemon and demo (a data error, no usage text);
    /// check and run keep their contract (2: a bad value).
    @Test func aBadScenarioFileIsSaidTheSameWay() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("mw-bad-\(UUID().uuidString).yaml")
        try "links:\n  wlan0: { kind: radio }\nsteps:\n  - { at: 0s }\n".write(
            to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        for name in ["links", "daemon", "demo", "check", "run"] {
            let run = try Self.run(name, ["--scenario", file.path])
            #expect(run.status == (["check", "run"].contains(name) ? 2 : 65), "\(name): \(run.stderr)")
            #expect(run.stderr.contains("\(file.path):2:"), "\(name): \(run.stderr)")
            #expect(!run.stderr.contains("Usage:"), "\(name): \(run.stderr)")
        }
    }

    /// The answer `policy explain` gives at an instant of the commute: (action, rule).
    static func explained(at instant: String) throws -> [String] {
        let run = try BinaryRun.run([
            "policy", "explain", "--policy", policy, "--scenario", commute, "--at", instant,
            "--size", "700MiB", "--json",
        ])
        let object = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        return [object?["action"] as? String ?? "?", object?["rule"] as? String ?? "?"]
    }

    /// `check --watch --local` over the commute: one line per change of the answer (home Wi-Fi, cellular,
    /// office Wi-Fi), the same answers `policy explain` gives at those instants, then exit 0 at its end.
    @Test func checkWatchHereFollowsAScenarioWithTheDecisionLoop() throws {
        let run = try BinaryRun.run([
            "check", "--watch", "--local", "--json", "--size", "700MiB", "--policy", Self.policy,
            "--scenario", Self.commute, "--speed", "50",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let answers = run.stdout.split(separator: "\n").compactMap { line -> [String]? in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                return nil
            }
            #expect(object["source"] as? String == "local")
            return [object["action"] as? String ?? "?", object["rule"] as? String ?? "?"]
        }
        let expected = try ["0s", "10s", "25s"].map(Self.explained(at:))
        #expect(expected[0] != expected[1], "the commute's answer should change on cellular")
        #expect(answers == expected, "\(run.stdout)")
    }

    /// `run` over the commute: the command starts on Wi-Fi, is stopped on cellular and continued at the
    /// office; its exit status is run's.
    @Test func runFollowsAScenarioWithTheDecisionLoop() throws {
        // 10 times faster: Wi-Fi for 0.8 s, cellular until 2 s, then Wi-Fi; the command sleeps past all three.
        let run = try BinaryRun.run([
            "run", "--policy", Self.policy, "--scenario", Self.commute, "--speed", "10",
            "--", "sh", "-c", "sleep 3; exit 7",
        ])
        #expect(run.status == 7, "\(run.stderr)")
        let notes = run.stderr.split(separator: "\n").map(String.init)
        let started = notes.firstIndex { $0.contains("started sh") && $0.contains("rule run-unmetered") }
        let stopped = notes.firstIndex { $0.contains("stopped sh (SIGSTOP)") && $0.contains("rule pause-metered") }
        let continued = notes.firstIndex { $0.contains("continued sh") && $0.contains("rule run-unmetered") }
        #expect(started != nil && stopped != nil && continued != nil, "\(run.stderr)")
        if let started, let stopped, let continued {
            #expect(started < stopped && stopped < continued, "\(run.stderr)")
        }
    }
}
