import Foundation

/// What a lab run measured: the kernel's counters next to the engine's own accounting.
public struct LabReport: Sendable {
    public var scenario: String
    /// The server's content: its sha256 and size.
    public var sha256: String
    public var size: Int64
    /// The engine child's exit status.
    public var engineExit: Int32
    /// The engine's last stdout line when it was a JSON object.
    public var engineSummary: String?
    /// The engine's non-progress JSON events, with when the lab read them (since the run started).
    public var engineEvents: [(at: Duration, json: String)]
    /// Bytes received and sent per device interface over the engine's run (from the kernel).
    public var interfaces: [String: InterfaceCounters.Bytes]
    public var steps: [LabAnalysis.StepFigures]
    /// Bytes each metered link received while it was the primary.
    public var meteredPrimaryBytes: [String: Int64]
    public var duration: Duration
    /// The engine's stderr, kept when it failed.
    public var engineStderr: String
    /// The device's rx counters as sampled through the run (for figures between events, e.g. what arrived
    /// after a pause).
    public var samples: [LabAnalysis.Sample]

    public init(
        scenario: String, sha256: String, size: Int64, engineExit: Int32, engineSummary: String?,
        engineEvents: [(at: Duration, json: String)], interfaces: [String: InterfaceCounters.Bytes],
        steps: [LabAnalysis.StepFigures], meteredPrimaryBytes: [String: Int64], duration: Duration,
        engineStderr: String, samples: [LabAnalysis.Sample] = []
    ) {
        self.scenario = scenario
        self.sha256 = sha256
        self.size = size
        self.engineExit = engineExit
        self.engineSummary = engineSummary
        self.engineEvents = engineEvents
        self.interfaces = interfaces
        self.steps = steps
        self.meteredPrimaryBytes = meteredPrimaryBytes
        self.duration = duration
        self.engineStderr = engineStderr
        self.samples = samples
    }

    /// The engine's summary as a dictionary.
    public var summaryObject: [String: Any]? {
        guard let engineSummary, let data = engineSummary.data(using: .utf8) else { return nil }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
    }

    /// Whether the engine verified the content: its `sha256_ok`, else its `sha256` compared with the
    /// server's (what `meterwise get --json` prints), else nil.
    public var sha256OK: Bool? {
        guard let summary = summaryObject else { return nil }
        if let ok = summary["sha256_ok"] as? Bool { return ok }
        if let hex = summary["sha256"] as? String { return engineExit == 0 && hex.lowercased() == sha256 }
        return nil
    }

    /// The engine's per-link byte counts: its `bytes_by_link`, else `{"total": bytes_fetched}`.
    public var engineBytes: [String: Int64]? {
        guard let summary = summaryObject else { return nil }
        if let byLink = summary["bytes_by_link"] as? [String: Any] {
            return byLink.compactMapValues { ($0 as? NSNumber)?.int64Value }
        }
        if let fetched = summary["bytes_fetched"] as? NSNumber { return ["total": fetched.int64Value] }
        return nil
    }

    /// The `--json` summary line's object.
    public func jsonObject() -> [String: Any] {
        func ms(_ d: Duration) -> Double { (d.inSeconds * 1000 * 10).rounded() / 10 }
        var object: [String: Any] = [
            "scenario": scenario,
            "sha256": sha256,
            "size": size,
            "sha256_ok": sha256OK.map { $0 as Any } ?? NSNull(),
            "engine_exit": Int(engineExit),
            "interfaces": interfaces.mapValues { ["rx_bytes": $0.rx, "tx_bytes": $0.tx] },
            "engine_bytes": engineBytes.map { $0 as Any } ?? NSNull(),
            "metered_primary_rx_bytes": meteredPrimaryBytes,
            "duration_seconds": (duration.inSeconds * 1000).rounded() / 1000,
            "steps": steps.map { step -> [String: Any] in
                var entry: [String: Any] = [
                    "index": step.index, "at_ms": ms(step.at), "ip_ms": ms(step.ipTime),
                    "primary": step.primary.map { $0 as Any } ?? NSNull(),
                    "rx_bytes": step.rxBytes,
                    "last_rx_after_ms": step.lastRxAfter.mapValues(ms),
                ]
                if let note = step.note { entry["note"] = note }
                return entry
            },
            "engine_events": engineEvents.compactMap { event -> [String: Any]? in
                guard let data = event.json.data(using: .utf8),
                    let value = try? JSONSerialization.jsonObject(with: data)
                else { return nil }
                return ["at_ms": ms(event.at), "event": value]
            },
        ]
        if let summary = summaryObject { object["engine_summary"] = summary }
        // Columns: the sample times, then each link's rx counter at those times.
        var columns: [String: Any] = ["at_ms": samples.map { ms($0.at) }]
        for link in Set(samples.flatMap(\.rx.keys)).sorted() { columns[link] = samples.map { $0.rx[link] ?? 0 } }
        object["rx_samples"] = columns
        return object
    }
}

extension Duration {
    /// The duration in seconds, as a Double.
    var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
