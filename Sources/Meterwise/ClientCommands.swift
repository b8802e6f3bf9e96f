import ArgumentParser
import ConfigKit
import Foundation
import MeterwiseClient
import NIOHTTP1
import Transfer

/// Options every client command shares.
struct ClientOptions: ParsableArguments {
    @Option(
        help:
            "The daemon's control socket (default: $METERWISE_SOCKET, else your own daemon's when it runs, else the system's)."
    )
    var socket: String?

    @Flag(help: "Print JSON.")
    var json = false

    var socketPath: String { socket ?? StatePaths.clientSocket }
}

/// `meterwise add URL`: queue a download in the daemon.
struct AddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "add", abstract: "Queue a download in the daemon.")

    @Argument(help: "The URL to download (http or https).")
    var url: String

    @Option(
        name: [.short, .customLong("output")], help: "Where to save it (default: the last part of the URL path, here).")
    var output: String?

    @Option(help: "The expected sha256 (hex); the download fails if it differs.")
    var sha256: String?

    @Flag(help: "This job may use metered links (when a policy rule lets such jobs).")
    var allowMetered = false

    @Flag(help: "This job may use a roaming link (when a policy rule lets such jobs: `allow_roaming: yes`).")
    var allowRoaming = false

    @Option(help: "Parallel ranged requests, 1-16 (default: 1 below 8 MiB, otherwise up to 4).")
    var segments: Int?

    @Option(
        help: ArgumentHelp(
            "background gives way to other traffic on the link (the default, unless a policy rule says otherwise); foreground takes the link as any download does (docs/background.md).",
            valueName: "background|foreground"))
    var mode: String?

    @Option(
        help: ArgumentHelp(
            "A separate HEAD URL (presigned URLs are signed per method); never required.", valueName: "url"))
    var headURL: String?

    @OptionGroup(title: "Deltas")
    var delta: DeltaOptions

    @OptionGroup(title: "Mirrors and Metalink")
    var sources: MirrorOptions

    @Option(help: "Higher runs first; 0 is normal.")
    var priority: Int = 0

    @Option(name: .customLong("tag"), help: "A tag policy rules can match (repeatable).")
    var tags: [String] = []

    @Option(help: "The size, when known in advance (e.g. 700MiB), for size rules before the server says.")
    var size: String?

    @Option(help: "The largest object to accept (e.g. 2GiB); a bigger one fails the job instead of filling the disk.")
    var maxSize: String?

    @Option(
        name: .customLong("cacert"),
        help: ArgumentHelp(
            "Trust only the CA certificates in this PEM file for the job's https server (the daemon reads it as you).",
            valueName: "file"))
    var caFile: String?

    @Option(
        name: .customLong("cert"),
        help: ArgumentHelp("A client certificate (PEM) for the job (mTLS).", valueName: "file"))
    var certFile: String?

    @Option(
        name: .customLong("key"), help: ArgumentHelp("The client certificate's private key (PEM).", valueName: "file"))
    var keyFile: String?

    @Option(
        help: ArgumentHelp(
            "The job's proxy (http://HOST:PORT); \"\" connects directly. Default: the daemon's environment.",
            valueName: "url"))
    var proxy: String?

    @Flag(
        name: .customLong("http2"),
        help:
            "Speak HTTP/2 where the https server offers it: segments as streams of one connection (off by default: connections are faster; docs/get.md)."
    )
    var http2 = false

    @OptionGroup var client: ClientOptions

    func validate() throws {
        if (certFile == nil) != (keyFile == nil) { throw ValidationError("--cert and --key go together: give both.") }
        if let size, Units.parseBytes(size) == nil { throw ValidationError("bad --size \(size): \(Units.bytesHint)") }
        if let mode, !JobSpec.modes.contains(mode) {
            throw ValidationError("bad --mode \(mode): background or foreground")
        }
        if let maxSize, Units.parseBytes(maxSize) == nil {
            throw ValidationError("bad --max-size \(maxSize): \(Units.bytesHint)")
        }
        if let sha256, ExpectedSHA256.parse(sha256) == nil {
            throw ValidationError("--sha256: \(ExpectedSHA256.hint).")
        }
        if let segments, !(1...16).contains(segments) { throw ValidationError("--segments must be between 1 and 16.") }
        if delta.isDelta, !sources.mirrors.isEmpty || sources.metalink != nil {
            throw ValidationError("--zsync takes one URL; mirrors and Metalink files are for whole downloads.")
        }
        if output == nil, OutputName.from(url: url) == nil {
            throw ValidationError("The URL has no file name to save to; give one with -o FILE.")
        }
    }

    func run() async throws {
        let output = self.output ?? OutputName.from(url: url) ?? ""
        // Absolute, but not normalised here: the daemon resolves `..` and symlinks as the kernel does, with
        // this user's rights.
        let absolute = { (path: String) in
            path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        }
        let destination = absolute(output)
        var spec = JobSpec(
            url: url, destination: destination, headURL: headURL, sha256: sha256.flatMap(ExpectedSHA256.parse),
            size: size.flatMap(Units.parseBytes), priority: priority, tags: tags, allowMetered: allowMetered,
            allowRoaming: allowRoaming ? true : nil, segments: segments,
            maxSize: maxSize.flatMap(Units.parseBytes), caFile: caFile.map(absolute),
            certFile: certFile.map(absolute), keyFile: keyFile.map(absolute), proxy: proxy)
        spec.mode = mode
        if http2 { spec.http2 = true }
        if delta.isDelta {
            spec.zsync = true
            // A local control file's path is made absolute; a URL is left as it is.
            spec.zsyncURL = delta.zsyncURL.map { $0.contains("://") ? $0 : absolute($0) }
            spec.seeds = delta.seeds.map(absolute)
        }
        if !sources.mirrors.isEmpty { spec.mirrors = sources.mirrors }
        // A local Metalink file is read by the daemon with this user's rights.
        spec.metalink = sources.metalink.map { sources.metalinkIsRemote ? $0 : absolute($0) }
        let (status, raw) = try await ControlClient(socketPath: client.socketPath)
            .call(.POST, "/v1/jobs", body: try ControlAPI.encoder().encode(spec), as: JobStatus.self)
        if client.json {
            Output.line(ShownText.json(String(decoding: raw, as: UTF8.self).trimmingCharacters(in: .newlines)))
        } else {
            let shown: (String) -> String = ShownText.escaped
            Output.line(
                "added \(shown(status.job.id)): \(status.job.state.rawValue) -> \(shown(status.job.destination))")
            if let reason = status.job.reason, status.job.state != .running { Output.line("  \(shown(reason))") }
        }
    }
}

/// `meterwise list`: every job in the daemon.
struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List the daemon's jobs.")

    @OptionGroup var client: ClientOptions

    func run() async throws {
        let (jobs, raw) = try await ControlClient(socketPath: client.socketPath).call(
            .GET, "/v1/jobs", as: [JobStatus].self)
        if client.json {
            Output.line(ShownText.json(String(decoding: raw, as: UTF8.self).trimmingCharacters(in: .newlines)))
            return
        }
        if jobs.isEmpty {
            Output.line("no jobs; add one with `meterwise add URL`")
            return
        }
        var rows = [["ID", "STATE", "DONE", "RULE", "FILE"]]
        for status in jobs {
            let rule = status.job.rule ?? status.heldBy.map { "- (\($0))" } ?? "-"
            rows.append(
                [
                    status.job.id, status.job.state.rawValue, JobText.progress(status.job), rule,
                    status.job.destination,
                ].map { ShownText.escaped($0) })
        }
        Output.line(SnapshotFormat.render(rows))
    }
}

/// `meterwise status [ID]`: where a job is and why, the rule and the reason included.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Show a job (or every job) and why it runs or waits.")

    @Argument(help: "The job's id (default: every job).")
    var id: String?

    @OptionGroup var client: ClientOptions

    func run() async throws {
        let api = ControlClient(socketPath: client.socketPath)
        guard let id else {
            let (jobs, raw) = try await api.call(.GET, "/v1/jobs", as: [JobStatus].self)
            if client.json {
                Output.line(ShownText.json(String(decoding: raw, as: UTF8.self).trimmingCharacters(in: .newlines)))
            } else {
                for status in jobs { Output.line(JobText.summary(status)) }
            }
            return
        }
        let (status, _) = try await api.call(.GET, "/v1/jobs/\(id)", as: JobStatus.self)
        let (explain, _) = try await api.call(.GET, "/v1/jobs/\(id)/explain", as: ControlAPI.ExplainBody.self)
        if client.json {
            let data = try ControlAPI.encoder().encode(StatusDocument(status: status, explain: explain))
            Output.line(ShownText.json(String(decoding: data, as: UTF8.self)))
            return
        }
        Output.line(JobText.summary(status))
        if let error = status.job.error { Output.line("  error: \(ShownText.escaped(error))") }
        if !status.job.state.isFinal {
            Output.line("  policy: " + ShownText.escaped("\(explain.action) (rule \(explain.rule ?? "default"))"))
            for line in explain.text.split(separator: "\n") { Output.line("    \(ShownText.escaped(line))") }
        }
    }
}

/// `status ID --json`: the job object of `GET /v1/jobs/{id}` (the shape `status --json` lists and `add --json`
/// prints), with the policy's explanation of `GET /v1/jobs/{id}/explain` added as `explain`: one shape for a
/// job wherever it is read.
struct StatusDocument: Encodable {
    var status: JobStatus
    var explain: ControlAPI.ExplainBody

    enum Keys: String, CodingKey { case explain }

    func encode(to encoder: any Encoder) throws {
        try status.encode(to: encoder)
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(explain, forKey: .explain)
    }
}

struct PauseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "pause", abstract: "Pause a job until `resume`.")
    @Argument(help: "The job's id.") var id: String
    @OptionGroup var client: ClientOptions
    func run() async throws { try await JobText.send(.pause, id: id, client: client) }
}

struct ResumeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "resume", abstract: "Resume a paused (or failed) job.")
    @Argument(help: "The job's id.") var id: String
    @OptionGroup var client: ClientOptions
    func run() async throws { try await JobText.send(.resume, id: id, client: client) }
}

struct CancelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel", abstract: "Cancel a job and delete its partial file.")
    @Argument(help: "The job's id.") var id: String
    @OptionGroup var client: ClientOptions
    func run() async throws { try await JobText.send(.cancel, id: id, client: client) }
}

/// `meterwise watch`: live progress, link changes and decisions from the daemon.
struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch", abstract: "Follow the daemon: link changes, decisions, progress.",
        discussion:
            "Runs until interrupted; exits 1 when the daemon goes away (its stream ends, or brings no keep-alive "
            + "for three intervals: docs/api.md).")

    @OptionGroup var client: ClientOptions

    func run() async throws {
        let tty = isatty(STDOUT_FILENO) == 1 && !client.json
        let encoder = ControlAPI.encoder()
        try await ControlClient(socketPath: client.socketPath).events { event in
            if client.json {
                if let data = try? encoder.encode(event) {
                    Output.line(ShownText.json(String(decoding: data, as: UTF8.self)))
                }
                return
            }
            let time = SnapshotFormat.timestamp(event.at)
            switch event.event {
            case "progress":
                let total = event.totalBytes ?? 0
                let fraction = total > 0 ? Double(event.bytesDone ?? 0) / Double(total) : 0
                let filled = Int(fraction * 30)
                let text =
                    ShownText.escaped(event.job ?? "")
                    + " [\(String(repeating: "#", count: filled))\(String(repeating: ".", count: 30 - filled))] "
                    + "\(Int(fraction * 100))% \(Units.formatBytes(event.bytesDone ?? 0)) "
                    + "\(Units.formatBytes(Int64(event.bytesPerSecond ?? 0)))/s"
                if tty { FileHandle.standardOutput.write(Data(("\r\u{1B}[2K" + text).utf8)) }
            case "links":
                let link = ShownText.escaped("\(event.primary ?? "none") (\(event.kind ?? "-"))")
                Output.line((tty ? "\r\u{1B}[2K" : "") + "\(time) link     primary \(link)")
            default:
                var text = "\(event.event.padding(toLength: 8, withPad: " ", startingAt: 0)) \(event.job ?? "")"
                if let action = event.action { text += " \(action)" }
                if let rule = event.rule { text += " (rule \(rule))" }
                if let link = event.link { text += " over \(link)" }
                if let reason = event.reason { text += ": \(reason)" }
                if let sha = event.sha256 { text += " sha256 \(sha)" }
                Output.line((tty ? "\r\u{1B}[2K" : "") + "\(time) " + ShownText.escaped(text))
            }
        }
    }
}

/// How client commands print jobs.
enum JobText {
    static func progress(_ job: JobRecord) -> String {
        guard let total = job.totalBytes, total > 0 else { return Units.formatBytes(job.bytesDone) }
        return "\(Int(Double(job.bytesDone) * 100 / Double(total)))% of \(Units.formatBytes(total))"
    }

    /// Background mode's figures in a few words: `window 24.0 KiB over 2 connections, queue 3 ms over a
    /// 0.04 ms path (target 5 ms)`.
    static func background(_ b: BackgroundFigures) -> String {
        let ms = { (seconds: Double) in
            seconds < 0.001 ? String(format: "%.2f ms", seconds * 1000) : String(format: "%.0f ms", seconds * 1000)
        }
        var text =
            b.connections == 0
            ? "stepping aside for other traffic"
            : "window \(Units.formatBytes(Int64(b.window)))"
                + " over \(b.connections) connection\(b.connections == 1 ? "" : "s")"
        if let queue = b.queuingDelay, let base = b.baseDelay {
            text += ", queue \(ms(queue)) over a \(ms(base)) path"
        }
        return text + " (target \(ms(b.target)))"
    }

    static func summary(_ status: JobStatus) -> String {
        // Every value here may be another user's or a server's words: escaped (`ShownText`), line by line.
        let shown: (String) -> String = ShownText.escaped
        var text =
            "\(shown(status.job.id))  \(status.job.state.rawValue)  \(progress(status.job))  "
            + shown(status.job.destination)
        if let link = status.link { text += "  via \(shown(link))" }
        if status.job.state == .waiting || status.job.state == .queued, let reason = status.job.reason {
            text += "\n  why: \(shown(reason))"
            if let rule = status.job.rule { text += " [rule \(shown(rule))]" }
        }
        if let next = status.nextRetryAt {
            text += "\n  retrying at \(SnapshotFormat.timestamp(next))"
            if let reason = status.retryReason { text += ": \(shown(reason))" }
        }
        if let sha = status.job.sha256 { text += "\n  sha256 \(shown(sha))" }
        for source in status.job.sources ?? [] {
            text += "\n  source \(shown(source.url)): \(Units.formatBytes(source.bytes))"
            if let proxy = source.proxy { text += " via the proxy \(shown(proxy))" }
            if let why = source.dropped { text += ", dropped: \(shown(why))" }
            if let why = source.standby { text += ", standing by: \(shown(why))" }
        }
        if let toFetch = status.job.deltaBytes, let total = status.job.totalBytes {
            text +=
                "\n  delta: \(Units.formatBytes(toFetch)) to fetch of \(Units.formatBytes(total)); \(Units.formatBytes(max(0, total - toFetch))) from the old copy"
        }
        if status.job.state == .running, let mode = status.mode {
            text += "\n  mode \(shown(mode))"
            if let b = status.background { text += ": " + background(b) }
        }
        return text
    }

    static func send(_ command: ControlAPI.JobCommand, id: String, client: ClientOptions) async throws {
        let (status, raw) = try await ControlClient(socketPath: client.socketPath)
            .call(.POST, "/v1/jobs/\(id)/\(command.rawValue)", as: JobStatus.self)
        if client.json {
            Output.line(ShownText.json(String(decoding: raw, as: UTF8.self).trimmingCharacters(in: .newlines)))
        } else {
            Output.line("\(ShownText.escaped(status.job.id)): \(status.job.state.rawValue)")
        }
    }
}
