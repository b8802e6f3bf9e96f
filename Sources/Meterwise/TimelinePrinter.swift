import ConfigKit
import Engine
import Foundation
import Links
import Policy
import Synchronization
import Transfer

/// Prints engine events as a timeline for people (a progress bar on a terminal) or as JSON lines.
final class TimelinePrinter: Sendable {
    struct State {
        var lastPrimary: String?? = .none
        var progressShown = false
        var lastProgressQuarter = -1
        var policy: PolicySet?
    }

    let json: Bool
    let tty: Bool
    let clock: ScaledClock
    let start: ScaledClock.Instant
    let notes: [UInt64: String]
    let state = Mutex(State())

    init(json: Bool, clock: ScaledClock, scenario: Scenario?) {
        self.json = json
        self.tty = isatty(STDOUT_FILENO) == 1 && !json
        self.clock = clock
        self.start = clock.now
        var notes: [UInt64: String] = [:]
        for (number, step) in (scenario?.steps ?? []).enumerated() {
            if let note = step.note { notes[UInt64(number + 1)] = note }
        }
        self.notes = notes
    }

    var elapsed: Double { start.duration(to: clock.now).seconds }

    func header(source: String, size: Int64, policy: PolicySet, policySource: PolicySource, links: String) {
        state.withLock { $0.policy = policy }
        if json {
            emit([
                "event": "start", "url": RedactedURL.redact(source), "size": size, "links": links,
                "policy": policySource.description, "policy_files": policy.files,
            ])
            return
        }
        line("meterwise demo: \(Units.formatBytes(size)) from \(RedactedURL.redact(source))")
        line("policy: \(policySource)   links: \(links)")
        line("")
    }

    func show(_ event: EngineEvent) {
        switch event {
        case let .links(snapshot):
            let policy = state.withLock { $0.policy }
            let primary = snapshot.primary
            let metered = primary.map { policy?.classify(link: $0).metered ?? false }
            let note = notes[snapshot.sequence]
            if json {
                var object: [String: Any] = [
                    "event": "links", "primary": primary?.name ?? NSNull(),
                    "up": snapshot.links.filter(\.isUsable).map(\.name),
                ]
                if let kind = primary?.kind { object["kind"] = kind.rawValue }
                if let metered { object["metered"] = metered }
                if let note { object["note"] = note }
                emit(object)
                return
            }
            let description =
                primary.map { "\($0.name) (\($0.kind.rawValue), \(metered == true ? "metered" : "unmetered"))" }
                ?? "none"
            line("link     primary \(description)" + (note.map { "   — \($0)" } ?? ""))
        case let .decision(job, decision):
            if json {
                emit([
                    "event": "decision", "job": job, "action": decision.action.rawValue,
                    "rule": decision.rule ?? NSNull(), "rate": decision.rate ?? NSNull(),
                    "allowed_links": decision.allowedLinks, "reasons": decision.reasons,
                ])
                return
            }
            var text = "decide   \(decision.action.rawValue)"
            if let rate = decision.rate { text += " at \(Units.formatBytes(rate))/s" }
            text += " (rule \(decision.rule ?? "default"))"
            if let reason = decision.reasons.first { text += ": \(reason)" }
            line(text)
        case let .started(job, link, bound, resumedFrom):
            if json {
                emit(["event": "started", "job": job, "link": link, "bound": bound, "resumed_from": resumedFrom])
                return
            }
            line(
                resumedFrom > 0
                    ? "resume   over \(link) from \(Units.formatBytes(resumedFrom))\(bound ? " (bound to its address)" : "")"
                    : "start    over \(link)\(bound ? " (bound to its address)" : "")")
        case let .paused(job, reason, byUser, timing):
            if json {
                emit([
                    "event": "paused", "job": job, "reason": reason, "by_user": byUser,
                    "stop_ms": timing.stoppedAfter.seconds * 1000,
                ])
                return
            }
            line("pause    \(reason)")
        case let .waiting(job, remaining):
            if json {
                emit(["event": "waiting", "job": job, "remaining_seconds": remaining.seconds])
                return
            }
            line("wait     links must be stable for \(Units.formatDuration(remaining)) before resuming")
        case let .throttled(job, rate):
            if json {
                emit(["event": "throttled", "job": job, "rate": rate ?? NSNull()])
                return
            }
            line("throttle \(rate.map { "\(Units.formatBytes($0))/s" } ?? "off")")
        case let .progress(job, progress):
            showProgress(job: job, progress)
        case let .notice(job, text):
            if json { emit(["event": "notice", "job": job, "text": text]) } else { line("note     \(text)") }
        case let .completed(job, result):
            if json {
                emit([
                    "event": "completed", "job": job, "sha256": result.sha256 ?? NSNull(),
                    "bytes_done": result.totalBytes,
                ])
                return
            }
            line("done     \(Units.formatBytes(result.totalBytes))" + (result.sha256.map { " sha256 \($0)" } ?? ""))
        case let .failed(job, text):
            if json { emit(["event": "failed", "job": job, "error": text]) } else { line("failed   \(text)") }
        case let .cancelled(job):
            if json { emit(["event": "cancelled", "job": job]) } else { line("cancel") }
        case .added, .policyReloaded:
            break
        }
    }

    func showProgress(job: String, _ progress: DownloadProgress) {
        let total = progress.totalBytes ?? 0
        let fraction = total > 0 ? Double(progress.bytesDone) / Double(total) : 0
        if json {
            let quarter = Int(fraction * 10)
            let show = state.withLock { s -> Bool in
                defer { s.lastProgressQuarter = max(s.lastProgressQuarter, quarter) }
                return quarter > s.lastProgressQuarter
            }
            if show {
                emit([
                    "event": "progress", "job": job, "bytes_done": progress.bytesDone, "total_bytes": total,
                    "bytes_per_second": Int(progress.bytesPerSecond),
                ])
            }
            return
        }
        let width = 30
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        let text = String(
            format: "%6.1fs  [%@] %3d%%  %@ / %@  %@/s", elapsed, bar, Int(fraction * 100),
            Units.formatBytes(progress.bytesDone), Units.formatBytes(total),
            Units.formatBytes(Int64(progress.bytesPerSecond)))
        if tty {
            FileHandle.standardOutput.write(Data(("\r\u{1B}[2K" + text).utf8))
            state.withLock { $0.progressShown = true }
        } else {
            let quarter = Int(fraction * 4)
            let show = state.withLock { s -> Bool in
                defer { s.lastProgressQuarter = max(s.lastProgressQuarter, quarter) }
                return quarter > s.lastProgressQuarter
            }
            if show { Output.line(text) }
        }
    }

    func line(_ text: String) {
        let clear = state.withLock { s -> Bool in
            defer { s.progressShown = false }
            return s.progressShown
        }
        let prefix = text.isEmpty ? "" : String(format: "%6.1fs  ", elapsed)
        Output.line((clear ? "\r\u{1B}[2K" : "") + prefix + text)
    }

    func emit(_ object: [String: Any]) {
        var object = object
        object["elapsed_seconds"] = (elapsed * 1000).rounded() / 1000
        guard
            let data = try? JSONSerialization.data(
                withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        else { return }
        Output.line(String(decoding: data, as: UTF8.self))
    }

    func summary(_ summary: DemoSummary) {
        if json {
            Output.line(SnapshotFormat.encode(summary))
            return
        }
        line("")
        Output.line("summary")
        if let limit = summary.timedOutAfter {
            Output.line(
                "  timed out     after \(Units.formatted(limit, digits: 1)) s (--timeout): the download did not finish")
        }
        if let sha256 = summary.sha256 {
            Output.line(
                "  sha256        \(sha256) \(summary.sha256OK ? "verified" : "MISMATCH (expected \(summary.expected))")"
            )
        } else {
            Output.line("  sha256        (no file: the download did not finish; expected \(summary.expected))")
        }
        for (kind, bytes) in summary.bytesByKind.sorted(by: { $0.key < $1.key }) {
            Output.line(
                "  via \(kind.padding(toLength: 10, withPad: " ", startingAt: 0))\(Units.formatBytes(bytes)) (\(bytes) bytes)"
            )
        }
        Output.line("  paused        \(Units.formatted(summary.pausedSeconds, digits: 1)) s")
        Output.line("  wasted        \(Units.formatBytes(summary.wastedBytes)) (fetched twice or discarded)")
        Output.line("  elapsed       \(Units.formatted(summary.elapsedSeconds, digits: 1)) s, state \(summary.state)")
    }
}
