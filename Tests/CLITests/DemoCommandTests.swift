import Foundation
import TestSupport
import Testing

/// `meterwise demo` ending early: it says it timed out, not that a file it never finished is wrong.
@Suite(.needsBinary) struct DemoCommandTests {
    @Test func aTimeoutSaysSoAndNoMismatch() throws {
        let text = try BinaryRun.run(["demo", "--timeout", "1"])
        #expect(text.status == 1, "\(text.stderr)")
        #expect(text.stdout.contains("timed out     after 1.0 s (--timeout)"), "\(text.stdout)")
        #expect(!text.stdout.contains("MISMATCH"), "\(text.stdout)")
        #expect(text.stderr.contains("timed out after 1.0 s") && text.stderr.contains("--timeout"), "\(text.stderr)")

        let json = try BinaryRun.run(["demo", "--timeout", "1", "--json"])
        #expect(json.status == 1, "\(json.stderr)")
        let last = try #require(json.stdout.split(separator: "\n").last)
        let summary = try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any]
        #expect(summary?["timed_out"] as? Bool == true, "\(last)")
        #expect(summary?["timeout_seconds"] as? Double == 1, "\(last)")
    }
}
