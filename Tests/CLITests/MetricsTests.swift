import Foundation
import TestSupport
import Testing

/// `daemon --metrics-listen` and `--metrics-textfile`: the Prometheus text where a fleet reads it.
@Suite(.serialized) struct MetricsTests {
    @Test func metricsOnATCPPortAndInATextfile() async throws {
        let directory = URL(fileURLWithPath: "/tmp/mwm-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = try Nginx.freePort()
        let textfile = directory.appendingPathComponent("meterwise.prom").path
        let scenario = try DaemonProcess.scenario(in: directory, DaemonProcess.cellularForAnHour)
        let daemon = try DaemonProcess(
            directory: directory, scenario: scenario,
            extra: ["--metrics-listen", "\(port)", "--metrics-textfile", textfile])
        #expect(await daemon.waitUntilListening())
        func scrape(_ path: String) throws -> BinaryRun {
            try BinaryRun.run(
                ["-s", "-i", "--max-time", "5", "http://127.0.0.1:\(port)\(path)"], executable: "/usr/bin/curl")
        }
        #expect(
            await eventually { (try? scrape("/metrics").stdout.contains("200 OK")) == true },
            "no answer on port \(port)")
        let metrics = try scrape("/metrics").stdout
        #expect(metrics.contains("Content-Type: text/plain; version=0.0.4"), "\(metrics)")
        #expect(
            metrics.contains("meterwise_primary_link_info{link=\"wwan0\",kind=\"wwan\",metered=\"true\"} 1"),
            "\(metrics)")
        #expect(metrics.contains("# TYPE meterwise_link_received_bytes_total counter"), "\(metrics)")
        #expect(metrics.contains("meterwise_jobs{state=\"waiting\"} 0"), "\(metrics)")
        // Nothing else of the control API is served on the port.
        let jobs = try scrape("/v1/jobs").stdout
        #expect(jobs.hasPrefix("HTTP/1.1 404"), "\(jobs)")
        let post = try BinaryRun.run(
            [
                "-s", "-i", "--max-time", "5", "-X", "POST", "--data", "{}",
                "http://127.0.0.1:\(port)/metrics",
            ], executable: "/usr/bin/curl")
        #expect(post.stdout.hasPrefix("HTTP/1.1 405"), "\(post.stdout)")

        // The textfile: written once the first links are in, whole, with nothing left beside it.
        #expect(await eventually { FileManager.default.fileExists(atPath: textfile) }, "no \(textfile)")
        let text = try String(contentsOfFile: textfile, encoding: .utf8)
        #expect(text.contains("meterwise_primary_link_info{link=\"wwan0\""), "\(text)")
        #expect(text.hasSuffix("\n"))
        // A job added shows in the file within the 15 s cadence.
        let add = try daemon.cli([
            "add", "http://127.0.0.1:9/x.bin", "-o", directory.appendingPathComponent("x.bin").path,
        ])
        #expect(add.status == 0, "\(add.stderr)")
        #expect(
            await eventually(timeout: .seconds(25)) {
                ((try? String(contentsOfFile: textfile, encoding: .utf8)) ?? "").contains(
                    "meterwise_jobs{state=\"waiting\"} 1")
            }, "the textfile was not rewritten after a job was added")
        daemon.kill(SIGTERM)
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".tmp") }
        #expect(left.isEmpty, "temporary files left: \(left)")
        // The port is closed with the daemon.
        #expect(try scrape("/metrics").status != 0)
    }

    @Test func badMetricsOptionsAreUsageErrors() throws {
        let colon = try BinaryRun.run(["daemon", "--metrics-listen", ":9464"])
        #expect(colon.status == 64, "\(colon.stderr)")
        #expect(colon.stderr.contains("use PORT (loopback), HOST:PORT"), "\(colon.stderr)")
        let port = try BinaryRun.run(["daemon", "--metrics-listen", "127.0.0.1:70000"])
        #expect(port.status == 64, "\(port.stderr)")
        let suffix = try BinaryRun.run(["daemon", "--metrics-textfile", "/tmp/meterwise.txt"])
        #expect(suffix.status == 64, "\(suffix.stderr)")
        #expect(suffix.stderr.contains("only files named *.prom"), "\(suffix.stderr)")
        let missing = try BinaryRun.run(["daemon", "--metrics-textfile", "/no/such/dir/meterwise.prom"])
        #expect(missing.status == 64, "\(missing.stderr)")
        #expect(missing.stderr.contains("no directory /no/such/dir"), "\(missing.stderr)")
    }
}
