import ArgumentParser
import ConfigKit
import Engine
import Foundation
import Links
import MeterwiseClient
import Policy
import RangeServer
import Synchronization
import Transfer

/// `meterwise demo`: the Wi-Fi -> cellular -> Wi-Fi scenario end to end on simulated links, with an
/// embedded HTTP server; no root needed. With `--links netlink` the same engine runs on the kernel's
/// links (the lab runs it so inside a network namespace).
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the Wi-Fi -> cellular -> Wi-Fi scenario end to end (simulated links, embedded server).",
        discussion: """
            An embedded HTTP server on 127.0.0.1 serves a generated file with a strong ETag; the scenario \
            drives the simulated link monitor; the engine downloads with the policy and pauses by itself \
            while the primary link is metered. At the end: the verified sha256, bytes per link kind, time \
            paused and bytes wasted.
            """
    )

    @Option(help: ArgumentHelp(PolicyOption.help))
    var policy: String?

    @Option(help: "Size of the generated file.")
    var size: String = "64MiB"

    @Option(help: "The embedded server's rate per second (default: sized so the download spans the scenario).")
    var rate: String?

    @OptionGroup(
        title: "Links (default: the built-in docs/scenarios/commute.yaml; the server's rate scales with --speed)")
    var linkSource: LinkSourceOptions

    @Option(help: "Download this URL instead of starting the embedded server (with --links netlink).")
    var url: String?

    @Option(help: "The expected sha256 of --url's content.")
    var sha256: String?

    @Option(name: [.short, .customLong("output")], help: "Where to write the file (default: a temporary folder).")
    var output: String?

    @Flag(help: "Print events as JSON lines; the last line is the summary.")
    var json = false

    @Option(help: "Give up after this many seconds (default: the scenario's end + 120 s; 600 s with --links netlink).")
    var timeout: Double?

    func validate() throws {
        try ArgumentLimits.checkTimeout(timeout)
        guard Units.parseBytes(size) != nil else { throw ValidationError("bad --size \(size): \(Units.bytesHint)") }
        try ArgumentLimits.checkGenerated(Units.parseBytes(size), option: "--size", text: size)
        if let rate, Units.parseRateLimit(rate) == nil {
            throw ValidationError("bad --rate \(rate): \(Units.rateHint)")
        }
        if url != nil && sha256 == nil {
            throw ValidationError("--url needs --sha256 HEX so the result can be verified")
        }
        if let sha256, ExpectedSHA256.parse(sha256) == nil {
            throw ValidationError("--sha256: \(ExpectedSHA256.hint).")
        }
    }

    func run() async throws {
        let links = try linkSource.source(fallback: DemoDefaults.builtInScenario)
        let scenario = links.scenario
        let speed = linkSource.speed
        let policySource = PolicyLocator.current(explicit: self.policy)
        let policy = try PolicyOption.load(policySource)
        let clock = links.clock()
        let bytes = Units.parseBytes(size)!

        let work = FileManager.default.temporaryDirectory.appendingPathComponent("meterwise-demo-\(getpid())")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let destination = output.map { URL(fileURLWithPath: $0).path } ?? work.appendingPathComponent("demo.bin").path

        var server: RangeServer?
        let source: (url: String, sha256: String)
        if let url, let sha256 {
            source = (url, ExpectedSHA256.parse(sha256) ?? sha256)
        } else {
            let content = RangeContent.generated(size: bytes, seed: 0x6d65_7465)
            let perSecond =
                rate.flatMap(Units.parseRateLimit)
                ?? DemoDefaults.rate(size: bytes, scenario: scenario, resumeAfter: policy.resumeAfter)
            // The server throttles each response; the downloader opens one per segment.
            let segments = DownloadRequest(url: "", destination: "").segmentCount(total: bytes)
            let started = try await RangeServer.start(
                host: "127.0.0.1", port: 0, content: content,
                faults: [.throttle(bytesPerSecond: Int(Double(perSecond) * speed) / max(1, segments))])
            server = started
            source = (started.url("/demo.bin"), content.sha256Hex())
        }

        let monitor = links.monitor(clock: clock)
        let store = try JobStore(path: work.appendingPathComponent("jobs.sqlite").path)
        let engine = try Engine(
            policy: policy, store: store, monitor: monitor, clock: clock,
            configuration: EngineConfiguration(
                canBind: links.isKernel, stopWhenIdle: true,
                tuneRequest: { request in
                    request.checkpointEveryBytes = 1 << 20
                    request.checkpointEvery = .milliseconds(500)
                }))
        let printer = TimelinePrinter(json: json, clock: clock, scenario: scenario)
        printer.header(source: source.url, size: bytes, policy: policy, policySource: policySource, links: links.name)
        let events = engine.events.subscribe()
        let job = try await engine.add(JobSpec(url: source.url, destination: destination, sha256: source.sha256))
        let started = clock.now
        let limit = Duration.seconds(timeout ?? (scenario.map { $0.end.seconds + 120 } ?? 600))

        // Said before the shutdown it causes: the engine's run may end before the timer's task does.
        let timedOut = TimeoutFlag()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await engine.run() }
            group.addTask {
                for await event in events { printer.show(event) }
            }
            group.addTask {
                try await clock.sleep(until: started.advanced(by: limit), tolerance: nil)
                timedOut.fired.withLock { $0 = true }
                await engine.shutdown()
            }
            _ = try await group.next()
            group.cancelAll()
        }
        let outcome = !timedOut.fired.withLock { $0 }
        let status = try await engine.status(job.id)
        let actual =
            FileManager.default.fileExists(atPath: destination) ? try DemoDefaults.sha256(ofFile: destination) : nil
        var summary = DemoSummary(
            sha256: actual, expected: source.sha256, state: status.job.state.rawValue,
            bytesByKind: engine.accounting.bytesByKind, bytesByLink: engine.accounting.bytesByLink,
            pausedSeconds: status.pausedSeconds, refetchedBytes: status.job.refetchedBytes,
            bytesFetched: engine.accounting.bytesByLink.values.reduce(0, +), size: status.job.totalBytes ?? bytes,
            elapsedSeconds: started.duration(to: clock.now).seconds, timedOutAfter: outcome ? nil : limit.seconds)
        summary.discardedBytes = status.job.discardedBytes ?? 0
        printer.summary(summary)
        if !outcome {
            Output.error(
                "meterwise demo: timed out after \(Units.formatted(limit.seconds, digits: 1)) s with the job \(status.job.state.rawValue); "
                    + "give it longer with --timeout SECONDS (default: the scenario's end + 120 s)")
        }
        if let server { try? await server.shutdown() }
        if !outcome || !summary.sha256OK { throw ExitCode(1) }
    }
}

/// Whether the demo's time limit fired (set before the shutdown it causes).
final class TimeoutFlag: Sendable {
    let fired = Mutex(false)
}
