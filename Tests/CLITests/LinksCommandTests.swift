import Foundation
import TestSupport
import Testing

/// `meterwise links` and the errors of commands that read links: what the table says, the JSON says too;
/// a file with problems is not a usage error.
@Suite(.needsBinary) struct LinksCommandTests {
    static func scenario(_ text: String) throws -> URL {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("mw-links-\(UUID().uuidString).yaml")
        try text.write(to: file, atomically: true, encoding: .utf8)
        return file
    }

    static let hotspot = """
        links:
          wlan0: { kind: wlan, ssid: Phone, addresses: [172.20.10.4/28] }
        steps:
          - { at: 0s, up: [wlan0], primary: wlan0 }
        """

    /// The table's METERED verdict (an iPhone hotspot's subnet) is in `links --json` as `metered` and
    /// `metered_source`; a replayed scenario does not claim to show the kernel's facts.
    @Test func theHotspotGuessIsInTheJSONAndTheTableNamesTheScenario() throws {
        let file = try Self.scenario(Self.hotspot)
        defer { try? FileManager.default.removeItem(at: file) }
        let table = try BinaryRun.run(["links", "--scenario", file.path])
        #expect(table.status == 0, "\(table.stderr)")
        #expect(table.stdout.contains("yes (guess: 172.20.10.4/28 is in 172.20.10.0/28"), "\(table.stdout)")
        #expect(!table.stdout.contains("the kernel's facts only"), "\(table.stdout)")
        #expect(table.stdout.contains("replaying \(file.path)"), "\(table.stdout)")

        let json = try BinaryRun.run(["links", "--scenario", file.path, "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        let wlan = try #require((object?["links"] as? [[String: Any]])?.first { $0["name"] as? String == "wlan0" })
        #expect(wlan["metered"] as? Bool == true, "\(wlan)")
        #expect((wlan["metered_source"] as? String)?.contains("iPhone hotspot") == true, "\(wlan)")
        #expect(wlan["metered_hint"] is NSNull, "the hint stays what the sources said: none")
    }

    /// The kernel's links carry the verdict too, for every link.
    @Test func everyKernelLinkHasAVerdict() throws {
        let run = try BinaryRun.run(["links", "--json", "--hints", "none"])
        #expect(run.status == 0, "\(run.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        let links = try #require(object?["links"] as? [[String: Any]])
        for link in links {
            #expect(link["metered"] is Bool && link["metered_source"] is String, "\(link)")
        }
        let lo = try #require(links.first { $0["name"] as? String == "lo" })
        #expect(lo["metered"] as? Bool == false && lo["metered_source"] as? String == "kind loopback")
    }

    /// A scenario with problems: each at file:line, exit 65, and no usage text (the command line was right).
    @Test(arguments: [["links"], ["policy", "explain"], ["demo"]])
    func aBadScenarioIsADataErrorNotUsage(_ command: [String]) throws {
        let file = try Self.scenario("links:\n  wlan0: { kind: radio }\nsteps:\n  - { at: 0s }\n")
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try BinaryRun.run(command + ["--scenario", file.path])
        #expect(run.status == 65, "\(run.stderr)")
        #expect(run.stderr.contains("\(file.path):2:"), "\(run.stderr)")
        #expect(!run.stderr.contains("Usage:"), "\(run.stderr)")
    }

    /// `explain --link wwan9` where there is no wwan9: said plainly, with the links there are, no usage text.
    @Test func explainingAnUnknownLinkIsNotUsage() throws {
        let run = try BinaryRun.run([
            "policy", "explain", "--scenario", RepoPaths.file("docs/scenarios/commute.yaml"),
            "--link", "wwan9",
        ])
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains("no link named wwan9"), "\(run.stderr)")
        #expect(run.stderr.contains("wlan0, wwan0"), "\(run.stderr)")
        #expect(!run.stderr.contains("Usage:"), "\(run.stderr)")
    }
}
