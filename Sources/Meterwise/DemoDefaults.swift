import ArgumentParser
import Crypto
import Foundation
import Links
import Policy

/// The demo's inputs when the user names none: the shipped scenario and the policy `PolicyLocator` finds,
/// so `meterwise demo` works from any folder.
enum DemoDefaults {
    /// The scenario the demo plays without `--scenario FILE`: the built-in `docs/scenarios/commute.yaml`.
    static func builtInScenario() throws -> Scenario {
        do {
            return try ScenarioParser.parse(ShippedScenario.commuteYAML, file: ShippedScenario.name)
        } catch {
            Output.error("Error: the built-in scenario: \(error)")
            throw ExitCode(70)
        }
    }

    /// A server rate at which the scenario's first unmetered stretch carries about 90 % of the file, so
    /// the demo shows a pause and a resume and still ends soon after the last step.
    static func rate(size: Int64, scenario: Scenario?, resumeAfter: Duration) -> Int64 {
        let firstMetered =
            scenario?.timeline().first { entry in
                guard let primary = entry.snapshot.primary else { return true }
                return NetworkClass.meteredKinds.contains(primary.kind)
            }?.at.seconds ?? 8
        return max(64 * 1024, Int64(Double(size) * 0.9 / max(firstMetered, 1)))
    }

    static func sha256(ofFile path: String) throws -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw ValidationError("cannot read \(path)") }
        defer { try? handle.close() }
        var hasher = SHA256()
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty { hasher.update(data: chunk) }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }
}

/// What the demo measured; printed at the end, and as the last JSON line.
struct DemoSummary: Encodable {
    var sha256: String?
    var expected: String
    var state: String
    var bytesByKind: [String: Int64]
    var bytesByLink: [String: Int64]
    var pausedSeconds: Double
    var refetchedBytes: Int64
    var bytesFetched: Int64
    var size: Int64
    var elapsedSeconds: Double
    /// The `--timeout` (or its default) in seconds when the demo gave up before the download finished.
    var timedOutAfter: Double? = nil
    /// Bytes received and not kept (`discarded_bytes` of the job): mostly what was in flight at each pause.
    var discardedBytes: Int64 = 0

    var sha256OK: Bool { sha256 == expected }

    /// Bytes received beyond the file's size: fetched twice or discarded.
    var wastedBytes: Int64 { max(refetchedBytes, bytesFetched - size) }

    enum CodingKeys: String, CodingKey {
        case sha256OK = "sha256_ok", sha256, state, bytesByKind = "bytes_by_kind", bytesByLink = "bytes_by_link"
        case pausedSeconds = "paused_seconds", refetchedBytes = "refetched_bytes", wastedBytes = "wasted_bytes"
        case bytesFetched = "bytes_fetched", size, elapsedSeconds = "elapsed_seconds"
        case timedOut = "timed_out", timeoutSeconds = "timeout_seconds", discardedBytes = "discarded_bytes"
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(sha256OK, forKey: .sha256OK)
        try c.encode(sha256, forKey: .sha256)
        try c.encode(state, forKey: .state)
        var kinds = bytesByKind
        for kind in ["wlan", "wwan"] where kinds[kind] == nil { kinds[kind] = 0 }
        try c.encode(kinds, forKey: .bytesByKind)
        try c.encode(bytesByLink, forKey: .bytesByLink)
        try c.encode((pausedSeconds * 100).rounded() / 100, forKey: .pausedSeconds)
        try c.encode(refetchedBytes, forKey: .refetchedBytes)
        try c.encode(wastedBytes, forKey: .wastedBytes)
        try c.encode(bytesFetched, forKey: .bytesFetched)
        try c.encode(discardedBytes, forKey: .discardedBytes)
        try c.encode(size, forKey: .size)
        try c.encode((elapsedSeconds * 100).rounded() / 100, forKey: .elapsedSeconds)
        try c.encode(timedOutAfter != nil, forKey: .timedOut)
        try c.encode(timedOutAfter, forKey: .timeoutSeconds)
    }
}
