import ConfigKit
import MeterwiseClient
import Synchronization
import Transfer

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Renders download events: a progress bar on a TTY, plain lines otherwise, or one JSON object per line.
final class ProgressPrinter: Sendable {
    enum Mode: Sendable { case tty, plain, json }

    let mode: Mode
    let url: String
    let destination: String
    /// The proxy requests go through (its URL, password redacted); nil when direct. With several sources, the
    /// first URL's.
    let proxy: String?
    /// Whether the sources of the download go through different proxies, or some direct: each
    /// one's is then in the sources list.
    let proxiesDiffer: Bool
    private let last = Mutex<(time: Double, barShown: Bool)>((-10, false))
    private let paused = Mutex<Int64?>(nil)

    /// The bytes on disk when the download paused (its `.paused` event), nil before one.
    var pausedBytes: Int64? { paused.withLock { $0 } }

    init(mode: Mode, url: String, destination: String, proxy: String? = nil, proxiesDiffer: Bool = false) {
        self.mode = mode
        self.url = url
        self.destination = destination
        self.proxy = proxy
        self.proxiesDiffer = proxiesDiffer
    }

    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Prints one event; true when it is the last one (completed, paused, failed, cancelled).
    func print(_ event: DownloadEvent) -> Bool {
        if case .paused(let p) = event { paused.withLock { $0 = p.bytesDone } }
        switch mode {
        case .json:
            return printJSON(event)
        case .tty, .plain:
            return printText(event)
        }
    }

    /// A line on stderr (or stdout), ending the progress bar first.
    func line(_ text: String, toStdout: Bool = false) {
        let bar = last.withLock { s -> Bool in
            defer { s.barShown = false }
            return s.barShown
        }
        if bar { write("\r\u{1B}[K", stdout: false) }
        // Lines quote the server's words (headers, reasons): no control character reaches the terminal.
        write(ShownText.escaped(text) + "\n", stdout: toStdout)
    }

    private func write(_ text: String, stdout: Bool) {
        let fd = stdout ? STDOUT_FILENO : STDERR_FILENO
        var bytes = Array(text.utf8)
        bytes.withUnsafeMutableBytes { raw in
            var done = 0
            while done < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + done, raw.count - done)
                if n <= 0 { break }
                done += n
            }
        }
    }

    private func due(every seconds: Double) -> Bool {
        let now = Self.now()
        return last.withLock { s in
            guard now - s.time >= seconds else { return false }
            s.time = now
            return true
        }
    }

    private func printText(_ event: DownloadEvent) -> Bool {
        switch event {
        case .started(let total, let resumed, let segments):
            let size = total.map(Units.formatBytes) ?? "unknown size"
            let from = resumed > 0 ? ", resuming at \(Units.formatBytes(resumed))" : ""
            let via =
                proxiesDiffer
                ? ", each source through its own proxy or direct"
                : proxy.map { " via the proxy \($0)" } ?? ""
            line(
                "Downloading \(url) -> \(destination)\(via) (\(size), \(segments) segment\(segments == 1 ? "" : "s")\(from))"
            )
        case .progress(let p):
            if mode == .tty {
                guard due(every: 0.1) else { return false }
                write("\r\u{1B}[K" + bar(p), stdout: false)
                last.withLock { $0.barShown = true }
            } else if (p.activeSegments > 0 && p.bytesFetched > 0) || p.bytesPerSecond >= 1, due(every: 1) {
                // Nothing transferring (waiting to retry, the retry lines say why; a request still connecting):
                // no line of zeros.
                line(summary(p))
            }
        case .restarted(let reason):
            line("Restarting from 0: \(reason)")
        case .retrying(let attempt, let delay, let reason):
            line("Retry \(attempt) in \(Units.formatDuration(delay)): \(reason)")
        case .warning(let text):
            line("Warning: \(text)")
        case .checkpointed:
            break
        case .paused(let p):
            line("Paused at \(Units.formatBytes(p.bytesDone)).")
            return true
        case .completed(let r):
            let reused = r.resumedBytes > 0 ? ", \(Units.formatBytes(r.resumedBytes)) reused" : ""
            // Thrown away: received and not kept (docs/get.md, "Counts"); said only when it happened.
            let thrown = r.discardedBytes > 0 ? ", \(Units.formatBytes(r.discardedBytes)) received and not kept" : ""
            let twice = r.refetchedBytes > 0 ? ", \(Units.formatBytes(r.refetchedBytes)) received twice" : ""
            line(
                "Done: \(Units.formatBytes(r.totalBytes)), \(Units.formatBytes(r.bytesFetched)) fetched\(reused)\(thrown)\(twice)."
            )
            if r.path != destination { line("Saved as \(r.path), the name the Metalink file gives.") }
            return true
        case .cancelled:
            line("Cancelled; the partial file was removed.")
            return true
        case .failed:
            return true
        case .delta(let stage):
            printDelta(stage)
        case .sources(let list, let final):
            guard final else { break }
            for source in list {
                let state =
                    source.dropped.map { "dropped: \($0)" } ?? source.standby.map { "standing by: \($0)" } ?? "used"
                let via = source.proxy.map { " via the proxy \($0)" } ?? ""
                line("  \(source.url)\(via): \(Units.formatBytes(source.bytes)), \(state)")
            }
        }
        return false
    }

    private func printDelta(_ stage: DeltaStage) {
        switch stage {
        case .resumed(let blocks, let of):
            line("Resuming: \(blocks) of \(of) blocks are already in the partial file.")
        case .scanning(let seed, let scanned, let size):
            // Only on a terminal: a plain log gets the line that ends the scan.
            guard mode == .tty, scanned < size, due(every: 0.25) else { return }
            write(
                "\r\u{1B}[K" + "Scanning \(seed): \(Units.formatBytes(scanned)) of \(Units.formatBytes(size))",
                stdout: false)
            last.withLock { $0.barShown = true }
        case .scanned(let seed, let blocks, let of, let seconds):
            line("Scanned \(seed) in \(String(format: "%.1f", seconds)) s: \(blocks) of \(of) blocks found.")
        case .planned(let toFetch, let reused, let total):
            line(
                "\(Units.formatBytes(toFetch)) to fetch of \(Units.formatBytes(total)); \(Units.formatBytes(reused)) from the old copy."
            )
        }
    }

    private func deltaFields(_ stage: DeltaStage) -> [(String, JSONValue)]? {
        switch stage {
        case .resumed(let blocks, let of):
            return [("stage", .string("resumed")), ("blocks", .int(Int64(blocks))), ("blocks_total", .int(Int64(of)))]
        case .scanning(let seed, let scanned, let size):
            guard due(every: 0.5) else { return nil }
            return [
                ("stage", .string("scanning")), ("seed", .string(seed)), ("scanned_bytes", .int(scanned)),
                ("seed_bytes", .int(size)),
            ]
        case .scanned(let seed, let blocks, let of, let seconds):
            return [
                ("stage", .string("scanned")), ("seed", .string(seed)), ("blocks", .int(Int64(blocks))),
                ("blocks_total", .int(Int64(of))), ("seconds", .double(seconds)),
            ]
        case .planned(let toFetch, let reused, let total):
            return [
                ("stage", .string("planned")), ("bytes_to_fetch", .int(toFetch)), ("bytes_reused", .int(reused)),
                ("total_bytes", .int(total)),
            ]
        }
    }

    private func summary(_ p: DownloadProgress) -> String {
        var text = Units.formatBytes(p.bytesDone)
        if let total = p.totalBytes, total > 0 {
            text += " / \(Units.formatBytes(total)) (\(Int(Double(p.bytesDone) * 100 / Double(total)))%)"
        }
        text += ", \(Units.formatBytes(Int64(p.bytesPerSecond)))/s"
        if let eta = eta(p) { text += ", ETA \(eta)" }
        text += ", \(p.activeSegments) segment\(p.activeSegments == 1 ? "" : "s")"
        return text
    }

    private func eta(_ p: DownloadProgress) -> String? {
        guard let total = p.totalBytes, p.bytesPerSecond > 1 else { return nil }
        let seconds = Double(max(0, total - p.bytesDone)) / p.bytesPerSecond
        guard seconds < 1e7 else { return nil }
        return Units.formatDuration(.milliseconds(Int64(seconds * 1000)))
    }

    private func bar(_ p: DownloadProgress) -> String {
        let width = 30
        var filled = 0
        if let total = p.totalBytes, total > 0 { filled = Int(Double(width) * Double(p.bytesDone) / Double(total)) }
        filled = min(width, max(0, filled))
        return "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "] "
            + summary(p)
    }

    private func printJSON(_ event: DownloadEvent) -> Bool {
        var fields: [(String, JSONValue)]
        var terminal = false
        switch event {
        case .started(let total, let resumed, let segments):
            fields = [
                ("event", .string("started")), ("total_bytes", total.map { .int($0) } ?? .null),
                ("resumed_bytes", .int(resumed)), ("segments", .int(Int64(segments))),
                ("proxy", proxy.map { .string($0) } ?? .null), ("proxies_differ", .bool(proxiesDiffer)),
            ]
        case .progress(let p):
            guard due(every: 0.5) else { return false }
            fields = [("event", .string("progress"))] + progressFields(p)
        case .restarted(let reason):
            fields = [("event", .string("restarted")), ("reason", .string(reason))]
        case .retrying(let attempt, let delay, let reason):
            fields = [
                ("event", .string("retrying")), ("attempt", .int(Int64(attempt))),
                ("delay_seconds", .double(delay.seconds)),
                ("reason", .string(reason)),
            ]
        case .warning(let text):
            fields = [("event", .string("warning")), ("message", .string(text))]
        case .checkpointed(let done):
            fields = [("event", .string("checkpointed")), ("bytes_done", .int(done))]
        case .paused(let p):
            fields =
                [("event", .string("paused")), ("state", .string("paused"))] + progressFields(p)
                + [("message", .string("Run the same command again to resume."))]
            terminal = true
        case .completed(let r):
            fields =
                [("event", .string("completed")), ("state", .string("completed")), ("path", .string(r.path))]
                + (r.sha256.map { [("sha256", .string($0))] } ?? [])
                + [
                    ("total_bytes", .int(r.totalBytes)),
                    ("bytes_fetched", .int(r.bytesFetched)), ("refetched_bytes", .int(r.refetchedBytes)),
                    ("resumed_bytes", .int(r.resumedBytes)), ("discarded_bytes", .int(r.discardedBytes)),
                    ("proxy", proxy.map { .string($0) } ?? .null),
                ]
            terminal = true
        case .cancelled:
            fields = [("event", .string("cancelled")), ("state", .string("cancelled"))]
            terminal = true
        case .delta(let stage):
            guard let stageFields = deltaFields(stage) else { return false }
            fields = [("event", .string("delta"))] + stageFields
        case .sources(let list, let final):
            fields = [
                ("event", .string("sources")), ("final", .bool(final)),
                (
                    "sources",
                    .array(
                        list.map { source in
                            .object([
                                ("url", .string(source.url)), ("bytes", .int(source.bytes)),
                                ("dropped", source.dropped.map { .string($0) } ?? .null),
                                ("standby", source.standby.map { .string($0) } ?? .null),
                                ("proxy", source.proxy.map { .string($0) } ?? .null),
                            ])
                        })
                ),
            ]
        case .failed(let error):
            fields = [
                ("event", .string("failed")), ("state", .string("failed")), ("code", .string(error.code.rawValue)),
                ("message", .string(error.message)),
            ]
            terminal = true
        }
        write(JSONValue.object(fields).text + "\n", stdout: true)
        return terminal
    }

    private func progressFields(_ p: DownloadProgress) -> [(String, JSONValue)] {
        var fields: [(String, JSONValue)] = [
            ("bytes_done", .int(p.bytesDone)), ("total_bytes", p.totalBytes.map { .int($0) } ?? .null),
            ("bytes_fetched", .int(p.bytesFetched)), ("bytes_per_second", .int(Int64(p.bytesPerSecond))),
            ("active_segments", .int(Int64(p.activeSegments))), ("discarded_bytes", .int(p.discardedBytes)),
        ]
        if let b = p.background {
            let base: JSONValue = b.baseDelay.map { .micros($0) } ?? .null
            let queuing: JSONValue = b.queuingDelay.map { .micros($0) } ?? .null
            let background: [(String, JSONValue)] = [
                ("window", .int(Int64(b.window))), ("connections", .int(Int64(b.connections))),
                ("base_delay", base), ("queuing_delay", queuing), ("target", .double(b.target)),
                ("phase", .string(b.phase)),
            ]
            fields.append(("background", .object(background)))
        }
        return fields
    }
}

/// Just enough JSON for one event per line.
enum JSONValue {
    case string(String)
    case int(Int64)
    /// Seconds and other fractions, to the millisecond.
    case double(Double)
    /// Seconds to the microsecond (round trips and queuing delays).
    case micros(Double)
    case null
    case object([(String, JSONValue)])
    case array([JSONValue])
    case bool(Bool)

    var text: String {
        switch self {
        case .bool(let v): return v ? "true" : "false"
        case .int(let v): return String(v)
        case .double(let v): return v.isFinite ? String((v * 1000).rounded() / 1000) : "null"
        case .micros(let v): return v.isFinite ? String((v * 1_000_000).rounded() / 1_000_000) : "null"
        case .null: return "null"
        case .string(let s): return Self.quote(s)
        case .object(let fields):
            return "{" + fields.map { Self.quote($0.0) + ":" + $0.1.text }.joined(separator: ",") + "}"
        case .array(let values):
            return "[" + values.map(\.text).joined(separator: ",") + "]"
        }
    }

    static func quote(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if ShownText.isControl(scalar) {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
