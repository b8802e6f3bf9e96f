import Foundation
import Lab
import TestSupport
import Testing

/// Runs the built `meterwise` binary and checks what a user sees: stdout, stderr and the exit code.
@Suite struct CLITests {
    @Test func helpListsCommands() throws {
        let run = try BinaryRun.run(["--help"])
        #expect(run.status == 0)
        for command in ["links", "get", "policy"] { #expect(run.stdout.contains(command)) }
    }

    @Test func version() throws {
        let run = try BinaryRun.run(["--version"])
        #expect(run.status == 0)
        #expect(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ".").count == 3)
    }

    @Test func linksJSONListsLoopbackAndEthernet() throws {
        let run = try BinaryRun.run(["links", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        let links = try #require(object?["links"] as? [[String: Any]])
        #expect(links.contains { $0["name"] as? String == "lo" && $0["kind"] as? String == "loopback" })
        if FileManager.default.fileExists(atPath: "/sys/class/net/eth0") {
            #expect(links.contains { $0["name"] as? String == "eth0" && $0["kind"] as? String == "ethernet" })
        }
        #expect(object?.keys.contains("primary") == true)
        #expect(object?["default_routes"] is [Any])
    }

    @Test func scenarioWatchShowsPrimaryMoves() throws {
        let run = try BinaryRun.run([
            "links", "--watch", "--json", "--scenario", RepoPaths.file("docs/scenarios/commute.yaml"),
            "--speed", "20",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let primaries = run.stdout.split(separator: "\n").compactMap { line -> String? in
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object?["at"] is String)
            return object?["primary"] as? String
        }
        #expect(primaries == ["wlan0", "wwan0", "wlan0"])
    }

    @Test func badScenarioSaysWhereAndExitsNonZero() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("bad-\(getpid()).yaml")
        try "links:\n  wlan0: { kind: radio }\nsteps:\n  - { at: 0s }\n".write(
            to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try BinaryRun.run(["links", "--scenario", file.path])
        #expect(run.status != 0)
        #expect(run.stderr.contains("\(file.path):2:"), "\(run.stderr)")
    }

    /// A scenario file that is not there says so, and where a relative path is looked for; a folder is not a
    /// scenario file (the hint no longer offers "a directory of them", which only policies take).
    @Test func aMissingScenarioFileSaysItIsNotThere() throws {
        let missing = try BinaryRun.run(["links", "--scenario", "no-such-\(getpid()).yaml"])
        #expect(missing.status != 0)
        #expect(missing.stderr.contains("there is no such file"), "\(missing.stderr)")
        #expect(missing.stderr.contains("a relative path starts in the current folder"), "\(missing.stderr)")
        let folder = try BinaryRun.run(["links", "--scenario", FileManager.default.temporaryDirectory.path])
        #expect(folder.status != 0)
        #expect(folder.stderr.contains("not a regular file"), "\(folder.stderr)")
        #expect(!folder.stderr.contains("directory of them"), "\(folder.stderr)")
    }

    @Test func speedWithoutScenarioIsRejected() throws {
        let run = try BinaryRun.run(["links", "--speed", "5"])
        #expect(run.status == 64)
    }

    /// The must-show of the foundation issue: in a namespace with wlan0 and wwan0, `links --watch --json`
    /// prints a change after `ip link set wlan0 down`, and the primary moves to wwan0.
    @Test(.needsKernel) func watchInNamespaceSeesLinkDown() async throws {
        let uplinks = try VethUplinks.create(prefix: "mwcli")
        defer { uplinks.delete() }
        let watcher = try LineCollector([
            "/usr/sbin/ip", "netns", "exec", uplinks.device.name, RepoPaths.binary,
            "links", "--watch", "--json",
        ])
        defer { watcher.stop() }
        // Generous: the whole suite runs in parallel on two cores, and the binary starts inside `ip netns exec`.
        let first = await watcher.waitForLine(timeout: .seconds(30)) { $0.contains("\"primary\":\"wlan0\"") }
        #expect(first != nil, "no initial line with primary wlan0")
        let count = watcher.received.count
        let downAt = Date()
        try uplinks.device.ip("link", "set", "wlan0", "down")
        let change = await watcher.waitForLine(after: count, timeout: .seconds(15)) {
            $0.contains("\"primary\":\"wwan0\"")
        }
        let hit = try #require(change, "no line with primary wwan0 after wlan0 went down")
        // Latency goals live in bench/links; here only a sanity bound for a loaded CI machine.
        #expect(hit.at.timeIntervalSince(downAt) < 5)
    }
}
