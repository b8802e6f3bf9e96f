import Foundation
import TestSupport
import Testing

/// `meterwise run` counts what the command received over TCP, whatever call the tool reads with: curl
/// (recvfrom, which /proc/PID/io's rchar does not count) and wget (read) alike, within 2 % of what the
/// server sent.
@Suite(.serialized) struct RunTrafficTests {
    static var tools: [String] {
        ["curl", "wget"].filter { FileManager.default.isExecutableFile(atPath: "/usr/bin/" + $0) }
    }

    @Test(.enabled(if: !tools.isEmpty, "needs curl or wget in /usr/bin"), arguments: tools)
    func runCountsWhatTheToolReceived(tool: String) async throws {
        try await count(tool: tool, asNobody: false)
    }

    /// sock_diag needs no privilege for one's own processes: the same count for an ordinary user's `run`.
    @Test(
        .enabled(
            if: geteuid() == 0 && tools.contains("curl"), "runs curl as nobody through runuser: needs root and curl"))
    func runCountsAnOrdinaryUsersCommand() async throws {
        try await count(tool: "curl", asNobody: true)
    }

    func count(tool: String, asNobody: Bool) async throws {
        let directory = URL(fileURLWithPath: "/tmp/mwt-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        chmod(directory.path, 0o755)
        defer { try? FileManager.default.removeItem(at: directory) }
        let policy = directory.appendingPathComponent("policy.yaml")
        try """
        version: 1
        rules:
          - name: scripts-allowance
            when: { metered: yes, tags: [script] }
            action: run
            budget: { name: scripts, bytes: 1GiB, period: daily }
        """.write(to: policy, atomically: true, encoding: .utf8)
        let scenario = try DaemonProcess.scenario(in: directory, DaemonProcess.cellularForAnHour)
        let daemon = try DaemonProcess(
            directory: directory, scenario: scenario, policy: policy.path,
            extra: asNobody ? ["--group", "nogroup"] : [])
        defer { daemon.kill(SIGTERM) }
        #expect(await daemon.waitUntilListening())
        // 4 MB at 4 MB/s: about a second, several reports, and the socket's end after the last one.
        let size = 4_000_000
        let server = try await RangeServer.start(
            content: .generated(size: Int64(size), seed: 13),
            faults: [.throttle(bytesPerSecond: 4_000_000)])
        let command =
            tool == "curl"
            ? ["/usr/bin/curl", "-s", "-o", "/dev/null", server.url()]
            : ["/usr/bin/wget", "-q", "-O", "/dev/null", server.url()]
        let run = try BinaryRun.run(
            ["run", "--tag", "script", "--socket", daemon.socket, "--"] + command,
            prefix: asNobody ? SecurityTests.asNobody : [])
        try await server.shutdown()
        #expect(run.status == 0, "\(run.stderr)")
        let served = server.bytesServed
        #expect(served == Int64(size))
        let metrics = try daemon.api("/metrics").stdout
        let used =
            metrics.split(separator: "\n").first { $0.hasPrefix("meterwise_budget_used_bytes{") }
            .flatMap { Int64($0.split(separator: " ").last ?? "") } ?? 0
        // Headers and the FIN count too: a little over the body, never under by more than 2 %.
        #expect(
            abs(Double(used - served)) <= 0.02 * Double(served),
            "\(tool)\(asNobody ? " as nobody" : ""): counted \(used) of \(served) bytes\n\(metrics)\n\(run.stderr)")
    }
}
