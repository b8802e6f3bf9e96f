import ConfigKit
import Testing

/// A configuration error quotes what the file says; the file may say anything.
@Suite struct ConfigIssueTests {
    @Test func controlCharactersFromTheFileAreShownEscaped() {
        let issue = ConfigIssue(
            file: "p\u{1b}.yaml", line: 4, column: 11, message: "unknown mode `\u{1b}]0;PWNED\u{07}\u{9b}31m`",
            hint: "use `mode: background`\u{7f}")
        let text = issue.description
        #expect(!text.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" })
        #expect(!text.unicodeScalars.contains { (0x7F...0x9F).contains($0.value) })
        #expect(text.hasPrefix("p\\x1b.yaml:4:11: unknown mode `\\x1b]0;PWNED\\x07\\x9b31m`"))
        #expect(text.hasSuffix("hint: use `mode: background`\\x7f"))
        // Plain text is left as it is.
        #expect(
            ConfigIssue(file: "a.yaml", line: 1, column: 1, message: "bad `x`").description == "a.yaml:1:1: bad `x`")
    }
}
