import ConfigKit
import Foundation
import TestSupport
import Testing

@testable import Policy

/// 1000 randomly mutated copies of the shipped policies: the parser never crashes, and each either
/// loads or reports located errors (line and column inside the file).
@Suite struct FuzzTests {
    @Test func mutatedFilesNeverCrashTheParser() throws {
        let root = Fixtures.repoRoot()
        let sources = try ["default.yaml", "laptop.yaml", "edge-device.yaml"].map {
            try String(contentsOfFile: root + "/policies/" + $0, encoding: .utf8)
        }
        let alphabet = Array("abz019:-_ {}[]\"'#*?,.\n\t/<>=!&|%@\\")
        var rng = SplitMix(seed: 2026)
        var loaded = 0
        var rejected = 0
        for round in 0..<1000 {
            var chars = Array(sources[round % sources.count])
            for _ in 0..<(1 + Int(rng.next() % 6)) {
                guard !chars.isEmpty else { break }
                let at = Int(rng.next() % UInt64(chars.count))
                switch rng.next() % 4 {
                case 0: chars.remove(at: at)
                case 1: chars.insert(alphabet[Int(rng.next() % UInt64(alphabet.count))], at: at)
                case 2: chars[at] = alphabet[Int(rng.next() % UInt64(alphabet.count))]
                default:  // duplicate a slice (lines, keys)
                    let end = min(chars.count, at + Int(rng.next() % 40))
                    chars.insert(contentsOf: chars[at..<end], at: at)
                }
            }
            let text = String(chars)
            let lineCount = text.split(separator: "\n", omittingEmptySubsequences: false).count + 1
            do {
                let policy = try PolicySet.parse(files: [("m\(round).yaml", text)])
                let decision = policy.decide(
                    job: JobInfo(size: 1), snapshot: Fixtures.both, usage: Usage(), now: Fixtures.noon,
                    timeZone: Fixtures.berlin)
                // Whatever the mutation, a loaded policy gives an explained decision that names a rule of its own.
                #expect(!decision.reasons.isEmpty)
                if let rule = decision.rule { #expect(policy.rules.contains { $0.name == rule }) }
                loaded += 1
            } catch {
                rejected += 1
                #expect(!error.issues.isEmpty)
                for issue in error.issues {
                    #expect(issue.file == "m\(round).yaml")
                    #expect((1...lineCount).contains(issue.line), "\(issue) in\n\(text)")
                    #expect(issue.column >= 1)
                }
            }
        }
        // Both paths were exercised in earnest: mutations that still load, and mutations that are rejected.
        #expect(loaded > 100, "only \(loaded) of 1000 mutations loaded")
        #expect(rejected > 100, "only \(rejected) of 1000 mutations were rejected")
    }
}
