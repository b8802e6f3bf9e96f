import Foundation
import TestSupport
import Testing

/// Examples the docs give, run as a user would copy them: what the page promises is what the binary does.
@Suite struct DocExampleTests {
    /// The fenced block of `language` that follows the line containing `marker` in a doc page.
    static func block(in page: String, after marker: String, language: String = "yaml") throws -> String {
        let text = try String(contentsOfFile: RepoPaths.file(page), encoding: .utf8)
        let start = try #require(text.range(of: marker), "\(page) has no line with \(marker)")
        let fence = try #require(text.range(of: "```\(language)\n", range: start.upperBound..<text.endIndex))
        let end = try #require(text.range(of: "\n```", range: fence.upperBound..<text.endIndex))
        return String(text[fence.upperBound..<end.lowerBound]) + "\n"
    }

    /// integrations.md: "let `apt` run on metered links only at night", as a drop-in next to the default
    /// policy; on wwan0 (the commute scenario at 10 s) a job tagged apt runs at 02:30 and pauses at noon.
    @Test(arguments: [("02:30", "run", "apt-at-night-anywhere"), ("12:00", "pause", "pause-metered")])
    func aptAtNightRunsOnMeteredLinksAtNightOnly(time: String, action: String, rule: String) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mw-doc-apt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.copyItem(
            atPath: RepoPaths.file("policies/default.yaml"),
            toPath: directory.appendingPathComponent("default.yaml").path)
        let example = try Self.block(in: "docs/integrations.md", after: "only at night")
        try example.write(to: directory.appendingPathComponent("local-apt.yaml"), atomically: true, encoding: .utf8)
        let run = try BinaryRun.run([
            "policy", "explain", "--policy", directory.path,
            "--scenario", RepoPaths.file("docs/scenarios/commute.yaml"), "--at", "10s",
            "--tag", "apt", "--time", time, "--json",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        #expect(object?["link"] as? String == "wwan0", "\(run.stdout)")
        #expect(object?["metered"] as? Bool == true, "\(run.stdout)")
        #expect(object?["action"] as? String == action, "\(run.stdout)")
        #expect(object?["rule"] as? String == rule, "\(run.stdout)")
    }
}
