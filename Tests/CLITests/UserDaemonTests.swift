import Foundation
import TestSupport
import Testing

/// `meterwise daemon --user`: XDG paths for policy, state and socket, and clients that find it unasked.
@Suite(.serialized) struct UserDaemonTests {
    /// A user's XDG directories under one temporary home.
    struct Home {
        let root: URL
        var config: URL { root.appendingPathComponent("config") }
        var state: URL { root.appendingPathComponent("state") }
        var runtime: URL { root.appendingPathComponent("runtime") }

        /// `env` arguments that give a program this home and nothing of the caller's daemon.
        var env: [String] {
            [
                "/usr/bin/env", "-u", "METERWISE_SOCKET", "-u", "METERWISE_POLICY", "HOME=\(root.path)",
                "XDG_CONFIG_HOME=\(config.path)", "XDG_STATE_HOME=\(state.path)", "XDG_RUNTIME_DIR=\(runtime.path)",
            ]
        }

        init() throws {
            root = URL(fileURLWithPath: "/tmp/mwu-\(UInt32.random(in: 0...UInt32.max))")
            for directory in [root, config, state, runtime] {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            }
        }

        func cli(_ arguments: [String]) throws -> BinaryRun {
            try BinaryRun.run(arguments, prefix: env)
        }
    }

    @Test func userDaemonUsesXDGPathsAndClientsFindItWithoutSocket() async throws {
        let home = try Home()
        defer { try? FileManager.default.removeItem(at: home.root) }
        // The user's own policy, found by the daemon in $XDG_CONFIG_HOME/meterwise/policies.d.
        let policies = home.config.appendingPathComponent("meterwise/policies.d")
        try FileManager.default.createDirectory(at: policies, withIntermediateDirectories: true)
        try """
        version: 1
        rules:
          - { name: my-own-cellular-rule, when: { metered: yes }, action: pause }
        """.write(to: policies.appendingPathComponent("10-mine.yaml"), atomically: true, encoding: .utf8)
        let scenario = try DaemonProcess.scenario(
            in: home.root,
            """
            links:
              wwan0: { kind: wwan }
            steps:
              - { at: 0s, up: [wwan0], primary: wwan0 }
            end: 1h
            """)
        // As root too, --user means the user's paths, never /var/lib or /run.
        let daemon = try LineCollector(
            home.env + [
                RepoPaths.binary, "daemon", "--user", "--links", "scenario",
                "--scenario", scenario,
            ])
        defer { daemon.stop() }
        let socket = home.runtime.appendingPathComponent("meterwise.sock").path
        #expect(
            await eventually(timeout: .seconds(20)) { FileManager.default.fileExists(atPath: socket) },
            "no socket at $XDG_RUNTIME_DIR/meterwise.sock")
        #expect(
            FileManager.default.fileExists(atPath: home.state.appendingPathComponent("meterwise").path),
            "no state directory at $XDG_STATE_HOME/meterwise")

        // No --socket and no $METERWISE_SOCKET: the client finds the user's daemon.
        let add = try home.cli([
            "add", "http://127.0.0.1:9/x.bin", "-o", home.root.appendingPathComponent("x.bin").path,
            "--json",
        ])
        #expect(add.status == 0, "\(add.stderr)")
        let job = (try? JSONSerialization.jsonObject(with: Data(add.stdout.utf8)) as? [String: Any])?["job"]
        let id = try #require((job as? [String: Any])?["id"] as? String, "add printed \(add.stdout)")
        #expect(
            await eventually { (try? home.cli(["status", id]).stdout.contains("my-own-cellular-rule")) == true },
            "the job is not held by the user's own policy")
        // `check` asks the same daemon.
        let check = try home.cli(["check", "--json"])
        #expect(check.status == 1, "\(check.stdout) \(check.stderr)")
        #expect(check.stdout.contains("my-own-cellular-rule"), "\(check.stdout)")
    }

    @Test func userAndGroupTogetherIsAUsageError() throws {
        let run = try BinaryRun.run(["daemon", "--user", "--group", "adm"])
        #expect(run.status == 64, "\(run.status) \(run.stderr)")
        #expect(run.stderr.contains("--group is for the system daemon"), "\(run.stderr)")
    }
}
