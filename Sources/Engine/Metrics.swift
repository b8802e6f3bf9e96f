import ConfigKit
import Foundation
import Links
import MeterwiseClient
import Policy
import Transfer

/// The daemon's figures as Prometheus text (exposition format 0.0.4), for `GET /metrics` on the control
/// socket, `--metrics-listen` and `--metrics-textfile` alike. Names follow Prometheus conventions: a
/// `meterwise_` prefix, base units in the name (`_bytes`, `_seconds`), `_total` on counters, `_info` on
/// metrics whose labels are the information. Per-job series only for jobs that started a transfer and are
/// not finished (a queued job has paused for no time), so a fleet's series count stays bounded by what
/// runs, not by what is queued; a scrape reads no job records.
public enum Metrics {
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    public static func render<C: Clock>(engine: Engine<C>) async -> String
    where C.Duration == Duration, C.Instant: Sendable {
        let counts = await engine.stateCounts()
        let paused = await engine.pausedSeconds()
        let snapshot = await engine.snapshot
        let pass = await engine.lastPass
        let primaryMetered = await engine.primaryIsMetered()
        let stops = await engine.stopLatency
        let totals = await engine.totals
        var text = Text()
        text.family("meterwise_jobs", .gauge, "Jobs by state.")
        for state in JobState.allCases {
            text.sample("meterwise_jobs", ["state": state.rawValue], counts[state] ?? 0)
        }
        text.family("meterwise_link_received_bytes_total", .counter, "Bytes received by transfers, per link.")
        let kinds = Dictionary(snapshot.links.map { ($0.name, $0.kind.rawValue) }, uniquingKeysWith: { a, _ in a })
        for (link, bytes) in engine.accounting.bytesByLink.sorted(by: { $0.key < $1.key }) {
            text.sample("meterwise_link_received_bytes_total", ["link": link, "kind": kinds[link] ?? "unknown"], bytes)
        }
        for (name, help, value) in [
            (
                "meterwise_transfer_fetched_bytes_total", "Body bytes the jobs' transfers received (bytes_fetched).",
                totals.fetched
            ),
            (
                "meterwise_transfer_discarded_bytes_total",
                "Bytes received and not kept in a file (discarded_bytes): past a range's end, unread at a close, thrown away by a restart.",
                totals.discarded
            ),
            (
                "meterwise_transfer_refetched_bytes_total",
                "Bytes of completed files received more than once (refetched_bytes).", totals.refetched
            ),
        ] {
            text.family(name, .counter, help)
            text.sample(name, [:], value)
        }
        text.family("meterwise_budget_used_bytes", .gauge, "Bytes counted against each budget in its current period.")
        for (key, bytes) in engine.accounting.usage.bytes.sorted(by: { $0.key < $1.key }) {
            text.sample("meterwise_budget_used_bytes", ["budget": key], bytes)
        }
        text.family(
            "meterwise_job_paused_seconds", .gauge, "Time each started, unfinished job has spent paused by the policy.")
        for (job, seconds) in paused {
            text.sample("meterwise_job_paused_seconds", ["job": job], seconds)
        }
        let modes = await engine.transferModes()
        text.family(
            "meterwise_job_transfer_mode_info", .gauge,
            "Each transferring job's mode: background gives way to other traffic (docs/background.md).")
        for (job, mode, _) in modes {
            text.sample("meterwise_job_transfer_mode_info", ["job": job, "mode": mode.rawValue], 1)
        }
        for (name, help, value) in [
            (
                "meterwise_job_background_window_bytes",
                "Background mode: the receive window a job's connections share.",
                { (b: BackgroundState) -> Double? in Double(b.window) }
            ),
            (
                "meterwise_job_base_delay_seconds", "Background mode: the lowest round trip of the path.",
                { (b: BackgroundState) -> Double? in b.baseDelay }
            ),
            (
                "meterwise_job_queuing_delay_seconds",
                "Background mode: the round trip now less the base (the queue the link holds).",
                { (b: BackgroundState) -> Double? in b.queuingDelay }
            ),
        ] {
            text.family(name, .gauge, help)
            for (job, _, background) in modes {
                if let background, let v = value(background) { text.sample(name, ["job": job], v) }
            }
        }
        text.family(
            "meterwise_primary_link_info", .gauge,
            "The primary uplink: its name, kind and whether the policy counts it metered.")
        if let primary = snapshot.primary {
            text.sample(
                "meterwise_primary_link_info",
                [
                    "link": primary.name, "kind": primary.kind.rawValue,
                    "metered": primaryMetered == true ? "true" : "false",
                ], 1)
        }
        text.family("meterwise_decision_pass_seconds", .gauge, "How long the last pass deciding every job took.")
        text.sample("meterwise_decision_pass_seconds", [:], pass.duration.seconds)
        text.family("meterwise_decision_pass_jobs", .gauge, "Jobs the last pass decided.")
        text.sample("meterwise_decision_pass_jobs", [:], pass.jobs)
        text.family(
            "meterwise_pause_stop_seconds", .histogram,
            "From a pause's decision (or a user's pause or cancel) to its transfer ended with the checkpoint written.")
        for (bound, count) in stops.cumulative {
            text.sample("meterwise_pause_stop_seconds_bucket", ["le": bound], count)
        }
        text.sample("meterwise_pause_stop_seconds_sum", [:], stops.sum)
        text.sample("meterwise_pause_stop_seconds_count", [:], stops.count)
        return text.output
    }

    /// Builds exposition text: `# HELP`/`# TYPE` once per family, then its samples.
    struct Text {
        enum Kind: String { case gauge, counter, histogram }
        private(set) var output = ""

        mutating func family(_ name: String, _ kind: Kind, _ help: String) {
            output += "# HELP \(name) \(help)\n# TYPE \(name) \(kind.rawValue)\n"
        }

        mutating func sample(
            _ name: String, _ labels: KeyValuePairs<String, String>, _ value: some CustomStringConvertible
        ) {
            output += name
            if !labels.isEmpty {
                output += "{" + labels.map { "\($0.key)=\"\(Self.escape($0.value))\"" }.joined(separator: ",") + "}"
            }
            output += " \(value)\n"
        }

        /// A label value as the format wants it: backslash, double quote and newline escaped (a link's
        /// name may hold any of them).
        static func escape(_ value: String) -> String {
            var escaped = ""
            for character in value {
                switch character {
                case "\\": escaped += "\\\\"
                case "\"": escaped += "\\\""
                case "\n": escaped += "\\n"
                default: escaped.append(character)
                }
            }
            return escaped
        }
    }
}
