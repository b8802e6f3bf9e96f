import Foundation
import TestSupport
import Testing

@testable import Engine

/// The control API's query parser: whatever a client sends, an answer or an error, never a trap.
@Suite struct QueryStringTests {
    @Test(arguments: [
        ("size=1&tags=a,b", [("size", "1"), ("tags", "a,b")]),
        ("", []),
        ("&&size=1&", [("size", "1")]),
        ("allow_metered", [("allow_metered", "")]),
        ("tags=%61pt", [("tags", "apt")]),
        ("a=b=c", [("a", "b=c")]),
    ])
    func parses(query: String, expected: [(String, String)]) throws {
        let parsed = try QueryString.parse(Substring(query))
        #expect(parsed == QueryString(parameters: expected.map { (name: $0.0, value: $0.1) }))
    }

    @Test(arguments: [
        ("=", "has no name"), ("=x", "has no name"), ("size=1&size=2", "given twice"), ("%zz=1", "percent-encoding"),
        ("size=%", "percent-encoding"), ("size=%ff", "percent-encoding"),
        (String(repeating: "a", count: 20_001), "over"),
    ])
    func refuses(query: String, saying: String) {
        #expect {
            try QueryString.parse(Substring(query))
        } throws: { error in
            (error as? EngineError)?.code == .invalidRequest && "\(error)".contains(saying)
        }
    }

    /// The decision questions that used to trap the daemon (an empty name, the lowest Int) are answered.
    @Test(arguments: [
        "/v1/decision?=", "/v1/decision?priority=-9223372036854775808", "/v1/decision?priority=9223372036854775807",
        "/v1/decision?size=-1", "/v1/decision?size=99999999999999999999", "/v1/decision?allow_metered=maybe",
        "/v1/decision?==&&=", "/v1/decision?priority=1000001",
        "/v1/decision?tags=" + String(repeating: "x,", count: 65),
    ])
    func badQuestionsAreRefused(target: String) {
        #expect(throws: EngineError.self) { try ControlRouter<ContinuousClock>.decisionQuery(target) }
    }

    @Test func goodQuestionsAreRead() throws {
        let job = try ControlRouter<ContinuousClock>.decisionQuery(
            "/v1/decision?size=700&tags=apt,,x&allow_metered=true&allow_roaming=0&priority=-1000000")
        #expect(job.size == 700 && job.tags == ["apt", "x"] && job.allowMetered && job.allowRoaming == false)
        #expect(job.priority == -1_000_000)
    }

    /// Property: random bytes never trap, and any list of distinct named pairs survives percent-encoding
    /// and parsing unchanged. The seed is printed so a failure can be replayed.
    @Test func randomQueriesNeverTrapAndRoundTrip() throws {
        let seed = SplitMix.seed(from: "METERWISE_QUERY_SEED")
        print("QueryStringTests: seed \(seed) (replay with METERWISE_QUERY_SEED=\(seed))")
        var rng = SplitMix(seed: seed)
        let alphabet = Array("=&%?+,;/ #aZ09\u{0}\u{1B}\u{9B}é€".unicodeScalars)
        for _ in 0..<5_000 {
            let text = String(
                String.UnicodeScalarView(
                    (0..<Int.random(in: 0...40, using: &rng)).map { _ in
                        alphabet.randomElement(using: &rng)!
                    }))
            _ = try? QueryString.parse(Substring(text))
            _ = try? ControlRouter<ContinuousClock>.decisionQuery("/v1/decision?" + text)
        }
        let allowed = CharacterSet.alphanumerics
        for _ in 0..<2_000 {
            var pairs: [(name: String, value: String)] = []
            for index in 0..<Int.random(in: 0...6, using: &rng) {
                let value = String(
                    String.UnicodeScalarView(
                        (0..<Int.random(in: 0...12, using: &rng)).map { _ in
                            alphabet.randomElement(using: &rng)!
                        }))
                pairs.append(("n\(index)" + (index % 2 == 0 ? "é=&" : ""), value))
            }
            let query = pairs.map {
                $0.name.addingPercentEncoding(withAllowedCharacters: allowed)! + "="
                    + $0.value.addingPercentEncoding(withAllowedCharacters: allowed)!
            }.joined(separator: "&")
            #expect(try QueryString.parse(Substring(query)) == QueryString(parameters: pairs), "seed \(seed): \(query)")
        }
    }
}
