import ConfigKit
import PropertyBased
import Testing

@testable import Policy

/// Every number a policy file holds is bounded when the file is read: a hostile value gives an issue at its
/// line that names the limit, never a trap and never a value past `PolicyBounds`.
@Suite struct BoundsTests {
    static func policy(_ body: String) -> String { "version: 1\n" + body }

    static func issues(_ text: String) -> [ConfigIssue] {
        do {
            _ = try PolicySet.parse(files: [("b.yaml", text)])
            return []
        } catch {
            return error.issues
        }
    }

    @Test(arguments: [
        ("defaults:\n  resume_after: 10000000000s\n", 3, 17, "resume_after must be at most 24h"),
        ("defaults:\n  resume_after: 24h1s\n", 3, 17, "resume_after must be at most 24h"),
        ("defaults:\n  resume_after: 99999999999999999999999999999d\n", 3, 17, "resume_after must be at most 24h"),
        ("defaults:\n  resume_after: -5s\n", 3, 17, "bad duration"),
        ("defaults:\n  resume_after: nan\n", 3, 17, "bad duration"),
        ("defaults:\n  throttle: 101GiB/s\n", 3, 13, "throttle must be at most 100GiB/s"),
        ("defaults:\n  throttle: 9223372036854775807/s\n", 3, 13, "throttle must be at most 100GiB/s"),
        ("rules:\n  - { name: r, throttle: 1e400/s }\n", 3, 26, "bad rate"),
        ("rules:\n  - { name: r, throttle: 18446744073709551616TiB/s }\n", 3, 26, "throttle must be at most 100GiB/s"),
        (
            "rules:\n  - { name: r, action: run, budget: { bytes: 1025TiB, period: daily } }\n", 3, 46,
            "budget bytes must be at most 1PiB"
        ),
        ("rules:\n  - { name: r, action: run, budget: { bytes: inf, period: daily } }\n", 3, 46, "bad size"),
        ("rules:\n  - { name: r, action: run, when: { size: \"< 2048TiB\" } }\n", 3, 43, "bad size test"),
        ("rules:\n  - { name: r, action: run, when: { size: \"99999999999999999999999\" } }\n", 3, 43, "bad size test"),
        ("rules:\n  - { name: r, action: run, when: { priority: \">= 1000001\" } }\n", 3, 47, "bad priority test"),
        (
            "rules:\n  - { name: r, action: run, when: { priority: \"= -9223372036854775808\" } }\n", 3, 47,
            "bad priority test"
        ),
        (
            "rules:\n  - { name: r, action: run, when: { priority: \"<= 9223372036854775807\" } }\n", 3, 47,
            "bad priority test"
        ),
        (
            "rules:\n  - { name: r, action: run, budget: { bytes: 1MiB, period: daily }, when: { budget_left: \"> 1e30\" } }\n",
            3, 90, "bad budget_left test"
        ),
        ("version: 99999999999999999999\n", 1, 10, "version must be from 1 to 1000"),
    ])
    func hostileNumbersAreLocatedErrors(body: String, line: Int, column: Int, message: String) {
        let found = Self.issues(body.hasPrefix("version:") ? body : Self.policy(body))
        let issue = found.first { $0.message.contains(message) }
        #expect(issue != nil, "\(found)")
        #expect(issue?.line == line, "\(found)")
        #expect(issue?.column == column, "\(found)")
    }

    @Test func valuesAtTheCapsLoad() throws {
        let policy = try PolicySet.parse(files: [
            (
                "caps.yaml",
                Self.policy(
                    """
                    defaults: { resume_after: 24h, throttle: 100GiB/s }
                    rules:
                      - { name: r, throttle: 100GiB/s, budget: { bytes: 1024TiB, period: daily },
                          when: { size: "< 1024TiB", priority: ">= -1000000", budget_left: "<= 1024TiB" } }
                    """)
            )
        ])
        #expect(policy.resumeAfter == .seconds(86_400))
        #expect(policy.defaults.rate == 100 << 30)
        #expect(policy.rules.first?.budget?.bytes == 1 << 50)
    }

    /// Random numbers (huge, negative, fractional, signed, hex-looking, NaN, inf) in every numeric field: the
    /// parser never traps, and a value it accepts is within that field's cap.
    @Test func randomNumbersInEveryFieldAreBounded() async {
        let numbers = [
            "0", "1", "-1", "+1", "1.5", "nan", "inf", "-inf", "1e308", "0x7f", "9223372036854775807",
            "9223372036854775808", "18446744073709551615", "99999999999999999999999999", "1152921504606846976",
            "0.0000000000000000000001", "123456789012.123456789", "",
        ]
        let units = ["", "B", "KiB", "MiB", "GiB", "TiB", "KB", "TB", "ms", "s", "m", "h", "d", "/s", "MiB/s", "TiB/s"]
        let fields: [(String, (String) -> String)] = [
            ("resume_after", { "defaults: { resume_after: \"\($0)\" }\n" }),
            ("defaults throttle", { "defaults: { throttle: \"\($0)\" }\n" }),
            ("rule throttle", { "rules:\n  - { name: r, throttle: \"\($0)\" }\n" }),
            ("budget", { "rules:\n  - { name: r, action: run, budget: { bytes: \"\($0)\", period: daily } }\n" }),
            ("size", { "rules:\n  - { name: r, action: run, when: { size: \"< \($0)\" } }\n" }),
            ("size range", { "rules:\n  - { name: r, action: run, when: { size: \"0..\($0)\" } }\n" }),
            ("priority", { "rules:\n  - { name: r, action: run, when: { priority: \"<= \($0)\" } }\n" }),
            (
                "budget_left",
                {
                    "rules:\n  - { name: r, action: run, budget: { bytes: 1MiB, period: daily }, when: { budget_left: \"= \($0)\" } }\n"
                }
            ),
            (
                "resets",
                {
                    "rules:\n  - { name: r, action: run, budget: { bytes: 1MiB, period: monthly, resets: \"\($0)\" } }\n"
                }
            ),
            ("time", { "rules:\n  - { name: r, action: run, when: { time: \"\($0):00-05:00\" } }\n" }),
        ]
        await propertyCheck(
            count: 2000, input: Gen.int(in: 0...(numbers.count - 1)), Gen.int(in: 0...(units.count - 1)),
            Gen.int(in: 0...(fields.count - 1))
        ) { n, u, f in
            let value = numbers[n] + units[u]
            let text = Self.policy(fields[f].1(value))
            do {
                let policy = try PolicySet.parse(files: [("r.yaml", text)])
                #expect(policy.resumeAfter <= PolicyBounds.resumeAfter.value, "\(value)")
                if let rate = policy.defaults.rate { #expect(rate <= PolicyBounds.rate.value) }
                for rule in policy.rules {
                    if let rate = rule.rate { #expect(rate > 0 && rate <= PolicyBounds.rate.value, "\(value)") }
                    if let bytes = rule.budget?.bytes { #expect(bytes <= PolicyBounds.budgetBytes.value, "\(value)") }
                    for comparison in [rule.when.size, rule.when.budgetLeft].compactMap({ $0 }) {
                        for bound in [comparison.low, comparison.high].compactMap({ $0 }) {
                            #expect(bound <= PolicyBounds.sizeTest.value + 1, "\(value)")
                        }
                    }
                    if let priority = rule.when.priority, let high = priority.high {
                        #expect(high <= PolicyBounds.priority.upperBound + 1, "\(value)")
                    }
                }
            } catch let error as PolicyError {
                #expect(!error.issues.isEmpty)
                for issue in error.issues { #expect(issue.line >= 2 && issue.line <= 3, "\(issue)") }
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
    }
}
