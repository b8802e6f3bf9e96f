import ConfigKit
import Testing

@testable import Policy

@Suite struct MatcherTests {
    @Test(arguments: [
        ("wlan*", "wlan0", true), ("wlan*", "wwan0", false), ("*", "", true), ("?", "", false),
        ("*iPhone*", "Anna's iPhone", true), ("[!H]*", "HomeNet", false), ("[a-c]x", "bx", true),
        ("a\\*", "a*", true), ("a\\*", "ab", false), ("*a*b*c", "xaybzc", true), ("*a*b*c", "xaybzcd", false),
        ("DIRECT-??-*", "DIRECT-xy-Printer", true),
    ])
    func globs(pattern: String, text: String, matches: Bool) {
        #expect(Glob(pattern).matches(text) == matches)
    }

    @Test(arguments: ["wl[an", "a\\", "[z-a]", "[]"])
    func badGlobs(pattern: String) {
        guard case .failure = Glob.compile(pattern) else {
            Issue.record("`\(pattern)` compiled")
            return
        }
    }

    @Test(arguments: [
        ("192.168.0.0/16", "192.168.1.20/24", true), ("192.168.0.0/16", "192.169.1.20", false),
        ("10.0.0.0/8", "fd00::1/64", false), ("fd00::/8", "fd12:3456::1/64", true), ("0.0.0.0/0", "1.2.3.4", true),
        ("192.168.1.7", "192.168.1.7/24", true), ("100.64.0.0/10", "100.127.255.255", true),
        ("100.64.0.0/10", "100.128.0.0", false),
    ])
    func subnets(subnet: String, address: String, contains: Bool) throws {
        #expect(try #require(Subnet(subnet)).contains(address) == contains)
    }

    @Test(arguments: ["10.0.0.0/33", "10.0.0/8", "fd00::/129", "host", "1.2.3.4/-1"])
    func badSubnets(text: String) {
        #expect(Subnet(text) == nil)
    }

    @Test(
        arguments: [
            ("< 20MiB", Int64(20 << 20) - 1, true), ("< 20MiB", 20 << 20, false), ("<= 5", 5, true), ("> 5", 5, false),
            (">= 5", 5, true), ("= 3", 3, true), ("3", 4, false), ("1..3", 2, true), ("1..3", 3, false),
        ] as [(String, Int64, Bool)])
    func comparisons(text: String, value: Int64, matches: Bool) throws {
        let parsed = try #require(Comparison.parse(text) { Units.parseBytes($0) })
        #expect(parsed.matches(value) == matches)
    }

    @Test(arguments: ["", "<", "3..1", "> lots", "=> 5"])
    func badComparisons(text: String) {
        #expect(Comparison.parse(text) { Units.parseBytes($0) } == nil)
    }
}
