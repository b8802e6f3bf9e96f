import Engine
import Foundation
import Logging
import Policy
import Synchronization
import Testing

/// The daemon's reload path (inotify on a drop-in directory) against hostile files: the previous policy
/// stays, the error is logged at file:line, and the engine answers `list()` throughout.
@Suite struct PolicyReloadTests {
    static let bomb: String = {
        var text = "version: 1\nl0: &l0 [x, x, x, x, x, x, x, x, x, x]\n"
        for level in 1..<8 {
            text +=
                "l\(level): &l\(level) [" + Array(repeating: "*l\(level - 1)", count: 10).joined(separator: ", ")
                + "]\n"
        }
        return text + "? *l7\n: 1\n"
    }()

    @Test func hostileDropInsKeepThePolicyAndTheEngineResponsive() async throws {
        let harness = try await EngineHarness(policy: Policies.standard)
        let directory = harness.directory.appendingPathComponent("policies.d")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Policies.standard.write(
            to: directory.appendingPathComponent("10-base.yaml"), atomically: true, encoding: .utf8)
        let logs = LogLines()
        let service = PolicyReloadService(
            engine: harness.engine, source: PolicySource(path: directory.path, origin: .explicit),
            logger: Logger(label: "reload") { _ in CapturingLogHandler(lines: logs) })
        let running = Task { try await service.run() }

        // The watcher starts with the service: touch a good drop-in until a reload shows it is watching.
        let extra = directory.appendingPathComponent("20-extra.yaml")
        let watching = await harness.until(timeout: .seconds(20)) {
            try? "version: 1\ndefaults: { resume_after: 7s }\n".write(to: extra, atomically: true, encoding: .utf8)
            try? await Task.sleep(for: .milliseconds(50))
            return await harness.engine.policy.resumeAfter == .seconds(7)
        }
        #expect(watching, "the good drop-in was never reloaded: \(logs.all)")
        let before = await harness.engine.policy

        for (name, text, location) in [
            ("30-bomb.yaml", Self.bomb, "30-bomb.yaml:6:"),
            ("30-bomb.yaml", "version: 1\ndefaults:\n  resume_after: 10000000000s\n", "30-bomb.yaml:3:17:"),
        ] {
            let rejectedBefore = logs.all.filter { $0.contains("policy not reloaded") }.count
            try text.write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
            var slowest = Duration.zero
            var rejected = false
            let clock = ContinuousClock()
            let deadline = clock.now + .seconds(10)
            while !rejected, clock.now < deadline {
                let started = clock.now
                _ = await harness.engine.list()
                slowest = max(slowest, clock.now - started)
                // One write can give several inotify events: wait for the rejection of this file's text.
                rejected =
                    logs.all.filter { $0.contains("policy not reloaded") }.count > rejectedBefore
                    && logs.all.last { $0.contains("policy not reloaded") }?.contains(location) == true
                try? await Task.sleep(for: .milliseconds(2))
            }
            #expect(rejected, "no rejection logged: \(logs.all)")
            #expect(logs.all.last { $0.contains("policy not reloaded") }?.contains(location) == true, "\(logs.all)")
            #expect(await harness.engine.policy == before)
            #expect(slowest < .milliseconds(100), "engine.list() took \(slowest) during the reload")
        }
        running.cancel()
        _ = try? await running.value
        await harness.close()
    }
}

final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

struct CapturingLogHandler: LogHandler {
    let lines: LogLines
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        lines.append("\(event.message)")
    }
}
