import Foundation
import Testing

@testable import ConfigKit

/// Files are read whole only when small and UTF-8; a bad byte is located, never replaced.
@Suite struct ConfigTextTests {
    @Test(
        arguments: [
            ([0x61, 0x62, 0xFF], 1, 3), ([0x61, 0x0A, 0x62, 0x63, 0xC3], 2, 3), ([0x0A, 0x0A, 0xC3, 0x28], 3, 1),
            ([0xE2, 0x82, 0xAC, 0x20, 0xED, 0xA0, 0x80], 1, 3), ([0xF8, 0x88, 0x80, 0x80, 0x80], 1, 1),
            ([0xC0, 0xAF], 1, 1),
        ] as [([UInt8], Int, Int)])
    func badBytesAreLocated(bytes: [UInt8], line: Int, column: Int) {
        #expect {
            _ = try ConfigText.decode(bytes, file: "p.yaml")
        } throws: { error in
            guard let issue = error as? ConfigIssue else { return false }
            return issue.file == "p.yaml" && issue.line == line && issue.column == column
                && issue.message.contains("not valid UTF-8")
        }
    }

    @Test func validTextIsKept() throws {
        let text = "version: 1\n# café ☕ 𝄞\n"
        #expect(try ConfigText.decode(Array(text.utf8), file: "p.yaml") == text)
    }

    @Test func largeAndBadFilesAreRefusedWithALocation() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mw-text-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let big = directory.appendingPathComponent("big.yaml")
        try Data(repeating: 0x20, count: ConfigText.maxBytes + 1).write(to: big)
        #expect(throws: ConfigIssue.self) { _ = try ConfigText.read(big.path) }
        do {
            _ = try ConfigText.read(big.path)
        } catch {
            #expect(error.message.contains("at most 1048576 bytes"), "\(error)")
        }
        let exact = directory.appendingPathComponent("exact.yaml")
        try Data(repeating: 0x20, count: ConfigText.maxBytes).write(to: exact)
        #expect(try ConfigText.read(exact.path)?.utf8.count == ConfigText.maxBytes)
        let latin1 = directory.appendingPathComponent("latin1.yaml")
        try Data("version: 1\nrules: # caf\u{E9}\n".data(using: .isoLatin1)!).write(to: latin1)
        do {
            _ = try ConfigText.read(latin1.path)
            Issue.record("latin-1 accepted")
        } catch {
            #expect(error.line == 2 && error.column == 13, "\(error)")
        }
        #expect(try ConfigText.read(directory.appendingPathComponent("missing.yaml").path) == nil)
        let fifo = directory.appendingPathComponent("fifo.yaml")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        #expect(throws: ConfigIssue.self) { _ = try ConfigText.read(fifo.path) }  // refused, not waited on
    }

    @Test func parseRefusesTextOverTheCap() {
        var reader = YAMLReader(file: "big.yaml")
        #expect(reader.parse("a: " + String(repeating: "x", count: ConfigText.maxBytes)) == nil)
        #expect(reader.issues.first?.message.contains("at most") == true)
    }
}
