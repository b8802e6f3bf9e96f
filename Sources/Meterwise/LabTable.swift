import ConfigKit
import Lab

/// The human summary of a lab run: kernel counters next to the engine's accounting.
enum LabTable {
    /// The engine's count for a link: 0 when it reports per link but not this one, "-" when it does not
    /// report per link at all.
    static func engineColumn(_ engine: [String: Int64]?, _ name: String) -> String {
        guard let engine, engine["total"] == nil else { return "-" }
        return Units.formatBytes(engine[name] ?? 0)
    }

    static func render(_ report: LabReport, uplinks: [LabUplink]) -> String {
        func pad(_ text: String, _ width: Int) -> String {
            text + String(repeating: " ", count: max(1, width - text.count))
        }
        let engine = report.engineBytes
        var lines = [
            "",
            "Scenario \(report.scenario), \(Units.formatBytes(report.size)) in "
                + Units.formatted(Double(report.duration.components.seconds), digits: 0) + " s",
            pad("link", 10) + pad("kind", 11) + pad("kernel rx (/proc/net/dev)", 28) + "engine",
        ]
        for uplink in uplinks {
            let rx = report.interfaces[uplink.name]?.rx
            lines.append(
                pad(uplink.name, 10) + pad(uplink.kind.rawValue, 11)
                    + pad(rx.map(Units.formatBytes) ?? "?", 28)
                    + engineColumn(engine, uplink.name))
        }
        if let total = engine?["total"] { lines.append(pad("total", 21) + pad("", 28) + Units.formatBytes(total)) }
        for (name, bytes) in report.meteredPrimaryBytes.sorted(by: { $0.key < $1.key }) {
            lines.append("\(name) received \(Units.formatBytes(bytes)) while it was the (metered) primary uplink.")
        }
        if let summary = report.summaryObject, let paused = summary["paused_seconds"] as? Double {
            let refetched = (summary["refetched_bytes"] as? Int64).map { ", refetched \(Units.formatBytes($0))" } ?? ""
            lines.append("The engine was paused for \(Units.formatted(paused, digits: 1)) s\(refetched).")
        }
        switch report.sha256OK {
        case true?: lines.append("sha256 \(report.sha256): verified")
        case false?: lines.append("sha256 \(report.sha256): MISMATCH")
        case nil: lines.append("sha256 \(report.sha256): not reported by the downloader")
        }
        return lines.joined(separator: "\n")
    }
}
