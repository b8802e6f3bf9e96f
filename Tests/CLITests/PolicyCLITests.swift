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

    @Test(arguments: [("2s", "run", "run-unmetered"), ("10s", "pause", "pause-metered"), ("26s", "run", "run-unmetered")])
    func explainFollowsTheCommute(at: String, action: String, rule: String) throws {
        let run = try BinaryRun.run(["policy", "explain", "--policy", RepoPaths.file("policies/default.yaml"),
                                     "--scenario", RepoPaths.file("scenarios/commute.yaml"), "--at", at, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        #expect(object?["action"] as? String == action)
        #expect(object?["rule"] as? String == rule)
        #expect((object?["reasons"] as? [String])?.isEmpty == false)
    }

    @Test func explainSaysWhyEarlierRulesMissed() throws {
        let run = try BinaryRun.run(["policy", "explain", "--policy", RepoPaths.file("policies/default.yaml"),
                                     "--scenario", RepoPaths.file("scenarios/commute.yaml"), "--at", "10s"])
        #expect(run.status == 0)
        #expect(run.stdout.contains("run-unmetered"), "\(run.stdout)")
        #expect(run.stdout.contains("pause-metered"), "\(run.stdout)")
    }
}
