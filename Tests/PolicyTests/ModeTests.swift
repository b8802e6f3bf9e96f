import Foundation
import Links
import Testing

@testable import Policy

/// `mode:` on rules and in `defaults` (docs/background.md): background gives way to other traffic,
/// foreground does not. The decision carries the matched rule's mode, else the default's, else none.
@Suite struct ModeTests {
    func decide(_ yaml: String, tags: [String] = []) throws -> Decision {
        try Fixtures.policy(yaml).decide(
            job: JobInfo(id: "j", tags: tags), snapshot: Fixtures.onWifi, usage: Usage(), now: Fixtures.noon,
            timeZone: Fixtures.utc)
    }

    @Test func aRuleSaysTheModeOfTheJobsItMatches() throws {
        let yaml = """
            defaults: { mode: background }
            rules:
              - name: urgent
                when: { tags: [urgent] }
                action: run
                mode: foreground
              - name: rest
                action: run
            """
        #expect(try decide(yaml, tags: ["urgent"]).mode == .foreground)
        #expect(try decide(yaml).mode == .background)
    }

    @Test func withoutAModeTheDecisionSaysNone() throws {
        #expect(try decide("rules:\n  - name: r\n    action: run\n").mode == nil)
        #expect(try decide("defaults: { action: run }\n").mode == nil)
        #expect(try decide("defaults: { mode: foreground }\n").mode == .foreground)
    }

    @Test func aBadModeIsAnErrorAtItsLine() throws {
        let issues = Fixtures.issues("rules:\n  - name: r\n    action: run\n    mode: fast\n")
        let issue = try #require(issues.first)
        #expect(issue.line == 4)
        #expect(issue.message.contains("unknown mode `fast`"))
        #expect(issue.hint?.contains("mode: foreground") == true)
        #expect(Fixtures.issues("defaults: { mode: 3 }\n").first?.message.contains("mode") == true)
    }
}
