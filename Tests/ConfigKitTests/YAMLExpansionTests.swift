import Testing

@testable import ConfigKit

/// Alias bombs and deep nesting are refused from the event stream, before Yams composes (and hashes) them.
@Suite struct YAMLExpansionTests {
    /// `levels` anchors, each a list of ten aliases of the one before: 10^levels values, used as a key.
    static func bomb(levels: Int) -> String {
        var text = "version: 1\nl0: &l0 [x, x, x, x, x, x, x, x, x, x]\n"
        for level in 1..<levels {
            text +=
                "l\(level): &l\(level) [" + Array(repeating: "*l\(level - 1)", count: 10).joined(separator: ", ")
                + "]\n"
        }
        return text + "? *l\(levels - 1)\n: 1\n"
    }

    @Test func aliasBombIsRefusedQuicklyWithItsLine() {
        let clock = ContinuousClock()
        var reader = YAMLReader(file: "bomb.yaml")
        var node: Any?
        let elapsed = clock.measure { node = reader.parse(Self.bomb(levels: 8)) }
        #expect(node == nil)
        #expect(elapsed < .milliseconds(200), "\(elapsed)")
        let issue = reader.issues.first
        #expect(issue?.message.contains("aliases expand too much") == true, "\(reader.issues)")
        // 10 + 100 + 1000 + 10^4 values fit; the list of 10^5 (line 6) crosses 100 000.
        #expect(issue?.line == 6, "\(String(describing: issue))")
    }

    @Test func aliasesWithinTheBudgetStillWork() throws {
        var reader = YAMLReader(file: "ok.yaml")
        let node = reader.parse("a: &a [x, y]\nb: *a\nc: { k: &k v, l: *k }\n")
        #expect(node != nil, "\(reader.issues)")
        #expect(reader.issues.isEmpty)
    }

    @Test(arguments: [
        (String(repeating: "[", count: 500) + String(repeating: "]", count: 500), 65),
        (String(repeating: "- ", count: 500) + "x\n", 129),
    ])
    func deepNestingIsRefused(text: String, column: Int) {
        var reader = YAMLReader(file: "deep.yaml")
        #expect(reader.parse(text) == nil)
        #expect(reader.issues.first?.message.contains("more than 64 deep") == true, "\(reader.issues.prefix(2))")
        #expect(reader.issues.first?.line == 1)
        #expect(reader.issues.first?.column == column)
    }

    /// Past libyaml's own limit (1000 levels) the scanner refuses first; either way, an issue and no crash.
    @Test func veryDeepNestingIsRefusedWithoutCrashing() {
        var reader = YAMLReader(file: "deep.yaml")
        let depth = 400_000
        #expect(reader.parse(String(repeating: "[", count: depth) + String(repeating: "]", count: depth)) == nil)
        #expect(reader.issues.first?.line == 1)
    }

    @Test func manyPlainValuesAreRefusedWithoutBlamingAliases() {
        var reader = YAMLReader(file: "wide.yaml")
        let text = "a: [" + Array(repeating: "1", count: 100_001).joined(separator: ",") + "]\n"
        #expect(reader.parse(text) == nil)
        #expect(reader.issues.first?.message.contains("more than 100000 values") == true, "\(reader.issues)")
        #expect(reader.issues.first?.message.contains("alias") == false)
    }

    @Test func counterSizesNestedAnchors() {
        var counter = YAMLExpansion.Counter(maxNodes: 50, maxDepth: 8)
        let steps: [YAMLExpansion.Counter.Step] = [
            .open(anchor: nil), .scalar(anchor: nil), .open(anchor: "a"), .scalar(anchor: nil), .scalar(anchor: nil),
            .close, .scalar(anchor: nil), .alias("a"), .alias("a"),
        ]
        for step in steps { #expect(counter.take(step, line: 1, column: 1) == nil) }
        // map, key, [list of 2] (3), key, 3 + 3 from the aliases
        #expect(counter.total == 1 + 1 + 3 + 1 + 3 + 3)
        for _ in 0..<12 { _ = counter.take(.alias("a"), line: 9, column: 4) }
        #expect(counter.take(.alias("a"), line: 9, column: 4)?.line == 9)
    }
}
