import Foundation
import Lab
import Testing

/// The `--json` summary: what it takes from the engine's last line and what it adds from the kernel.
@Suite struct LabReportTests {
    func report(summary: String?, exit: Int32 = 0) -> LabReport {
        LabReport(
            scenario: "commute", sha256: "ab", size: 10, engineExit: exit, engineSummary: summary,
            engineEvents: [(at: .milliseconds(1500), json: #"{"event":"paused"}"#)],
            interfaces: ["wlan0": .init(rx: 12, tx: 3), "wwan0": .init(rx: 1, tx: 0)],
            steps: [], meteredPrimaryBytes: ["wwan0": 1], duration: .seconds(2), engineStderr: "")
    }

    @Test func engineSummaryGivesVerdictAndPerLinkBytes() throws {
        let engine = report(summary: #"{"sha256_ok": true, "bytes_by_link": {"wlan0": 10}, "paused_seconds": 1.5}"#)
        #expect(engine.sha256OK == true)
        #expect(engine.engineBytes == ["wlan0": 10])
        let object = engine.jsonObject()
        #expect(object["sha256_ok"] as? Bool == true)
        #expect((object["interfaces"] as? [String: [String: Int64]])?["wlan0"]?["rx_bytes"] == 12)
        #expect((object["engine_bytes"] as? [String: Int64]) == ["wlan0": 10])
        #expect((object["engine_summary"] as? [String: Any])?["paused_seconds"] as? Double == 1.5)
        let events = try #require(object["engine_events"] as? [[String: Any]])
        #expect(events.first?["at_ms"] as? Double == 1500)
        #expect(JSONSerialization.isValidJSONObject(object))
    }

    @Test func getSummaryIsComparedWithTheServedHash() {
        let get = report(summary: #"{"event": "completed", "sha256": "AB", "bytes_fetched": 10}"#)
        #expect(get.sha256OK == true)
        #expect(get.engineBytes == ["total": 10])
        #expect(report(summary: #"{"sha256": "cd"}"#).sha256OK == false)
        #expect(report(summary: #"{"sha256": "ab"}"#, exit: 65).sha256OK == false)
    }

    @Test func noSummaryMeansNoVerdict() {
        let none = report(summary: nil, exit: 1)
        #expect(none.sha256OK == nil)
        #expect(none.engineBytes == nil)
        #expect(none.jsonObject()["sha256_ok"] is NSNull)
    }
}
