import Foundation
import TestSupport
import Testing

/// `meterwise policy check|explain` as a user runs them.
@Suite struct PolicyCLITests {
    @Test func shippedPoliciesPassCheck() throws {
        let run = try BinaryRun.run(["policy", "check", RepoPaths.file("policies")])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
    }

    @Test func badPolicyListsEveryErrorWithLocation() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("bad-policy-\(getpid()).yaml")
        try """
        version: 1
        rules:
          - { name: a, when: { metered: maybe }, action: run }
          - { name: b, when: { size: { over: 5XB } }, throttle: fast }
        """.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try BinaryRun.run(["policy", "check", file.path])
        #expect(run.status == 1)
        let output = run.stdout + run.stderr
        #expect(output.contains("\(file.path):3:"), "\(output)")
        #expect(output.contains("\(file.path):4:"), "\(output)")
    }

    @Test(arguments: [
        ("2s", "run", "run-unmetered"), ("10s", "pause", "pause-metered"), ("26s", "run", "run-unmetered"),
    ])
    func explainFollowsTheCommute(at: String, action: String, rule: String) throws {
        let run = try BinaryRun.run([
            "policy", "explain", "--policy", RepoPaths.file("policies/default.yaml"),
            "--scenario", RepoPaths.file("docs/scenarios/commute.yaml"), "--at", at, "--json",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        #expect(object?["action"] as? String == action)
        #expect(object?["rule"] as? String == rule)
        #expect((object?["reasons"] as? [String])?.isEmpty == false)
    }

    @Test func explainSaysWhyEarlierRulesMissed() throws {
        let run = try BinaryRun.run([
            "policy", "explain", "--policy", RepoPaths.file("policies/default.yaml"),
            "--scenario", RepoPaths.file("docs/scenarios/commute.yaml"), "--at", "10s",
        ])
        #expect(run.status == 0)
        #expect(run.stdout.contains("run-unmetered"), "\(run.stdout)")
        #expect(run.stdout.contains("pause-metered"), "\(run.stdout)")
    }

    /// The two files of issue 11 item 7: a duration that trapped converting to nanoseconds, and an alias
    /// bomb used as a mapping key (10^8 values; Yams took 11.5 s hashing it). Each is an error at
    /// file:line, in well under a second, with exit 1 like every invalid policy, and no signal.
    @Test(arguments: [
        (
            "resume.yaml", "version: 1\ndefaults:\n  resume_after: 10000000000s\n", ":3:17:",
            "resume_after must be at most 24h"
        ),
        ("bomb.yaml", PolicyCLITests.aliasBomb(levels: 8), ":6:", "aliases expand too much"),
    ])
    func hostilePolicyFilesFailFastWithALocation(name: String, text: String, location: String, message: String) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mw-hostile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent(name)
        try text.write(to: file, atomically: true, encoding: .utf8)
        let clock = ContinuousClock()
        var run: BinaryRun?
        let elapsed = try clock.measure { run = try BinaryRun.run(["policy", "check", file.path]) }
        let result = try #require(run)
        #expect(!result.signaled, "died of signal \(result.status): \(result.stderr)")
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains(file.path + location), "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(elapsed < .seconds(1), "policy check took \(elapsed)")
    }

    @Test func nonUTF8AndOversizedFilesAreLocatedErrors() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mw-bytes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let latin1 = directory.appendingPathComponent("10-latin1.yaml")
        try Data("version: 1\nrules: [] # caf".utf8 + [0xE9, 0x0A]).write(to: latin1)
        let big = directory.appendingPathComponent("20-big.yaml")
        try Data("version: 1\n".utf8 + Data(repeating: 0x0A, count: 2 << 20)).write(to: big)
        let run = try BinaryRun.run(["policy", "check", directory.path])
        #expect(!run.signaled && run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains(latin1.path + ":2:16: the file is not valid UTF-8: byte 0xE9"), "\(run.stderr)")
        #expect(run.stderr.contains(big.path + ":1:1: the file is"), "\(run.stderr)")
        #expect(!run.stderr.contains("\u{FFFD}"))
    }

    /// `levels` anchors, each a list of ten aliases of the one before, the last used as a mapping key.
    static func aliasBomb(levels: Int) -> String {
        var text = "version: 1\nl0: &l0 [x, x, x, x, x, x, x, x, x, x]\n"
        for level in 1..<levels {
            text +=
                "l\(level): &l\(level) [" + Array(repeating: "*l\(level - 1)", count: 10).joined(separator: ", ")
                + "]\n"
        }
        return text + "? *l\(levels - 1)\n: 1\n"
    }
}
