import Foundation
import Lab
import TestSupport
import Testing

/// The binary on a machine with a real NetworkManager (`NetworkManagerLab`): wlan0 reaches a phone hotspot
/// that says ANDROID_METERED; NetworkManager's verdict, and the user's own, decide — with no kernel change.
@Suite(.serialized, .needsNetworkManager, .needsBinary) struct NetworkManagerCLITests {
    func run(_ lab: NetworkManagerLab, _ arguments: [String]) throws -> BinaryRun {
        let argv = lab.onDevice([RepoPaths.binary] + arguments)
        return try BinaryRun.run(Array(argv.dropFirst()), executable: "/usr/sbin/ip")
    }

    @Test func linksAndExplainFollowNetworkManagersMetered() async throws {
        let lab = try await NetworkManagerLab.start()
        defer { lab.teardown() }
        let links = try run(lab, ["links", "--json"])
        let document = try JSONSerialization.jsonObject(with: Data(links.stdout.utf8)) as? [String: Any]
        let wlan = (document?["links"] as? [[String: Any]])?.first { $0["name"] as? String == "wlan0" }
        #expect(wlan?["metered_hint"] as? Bool == true, "\(links.stdout) \(links.stderr)")
        #expect(wlan?["metered_hint_source"] as? String == "networkmanager: guess-yes")
        #expect(document?["hint_sources"] as? [String] == ["networkmanager"])
        let table = try run(lab, ["links"])
        #expect(table.stdout.contains("yes (networkmanager: guess-yes)"), "\(table.stdout)")

        let policy = RepoPaths.file("policies/default.yaml")
        let paused = try run(lab, ["policy", "explain", "--link", "wlan0", "--size", "700MiB", "--policy", policy])
        #expect(paused.stdout.contains("decision: pause"), "\(paused.stdout)")
        #expect(paused.stdout.contains("networkmanager: guess-yes"))
        try lab.setMetered("no")
        #expect(
            await eventually {
                (try? run(lab, ["policy", "explain", "--link", "wlan0", "--size", "700MiB", "--policy", policy]))?
                    .stdout.contains("decision: run") == true
            }, "the user's connection.metered no did not turn the decision to run")
    }

    /// A `serve` of `size` at `rate` per response on the access point, a daemon on the lab's device with the
    /// default policy, and a job for the served file; `body` gets the served file, the job's status (`status
    /// --json`'s `job`) and when the daemon started. With `https`, the job's URL is the lab's https front
    /// (TestPKI's `lab` certificate, `wronghost` as the portal's own) and the job trusts the PKI's CA.
    func withDaemonJob(
        _ lab: NetworkManagerLab, size: String, rate: String, https pki: TestPKI? = nil,
        _ body: (_ info: LabRun.Served, _ job: () -> [String: Any], _ started: ContinuousClock.Instant) async throws
            -> Void
    ) async throws {
        let directory = URL(fileURLWithPath: lab.directory + "/daemon")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let socket = directory.appendingPathComponent("d.sock").path
        let server = [
            "ip", "netns", "exec", lab.accessPoint.name, RepoPaths.binary, "serve", "--host", lab.gateway,
            "--port", "8080", "--size", size, "--rate", rate,
        ]
        _ = try await ChildProcess.run(server) { server in
            var served: LabRun.Served?
            for await line in server.lines {
                served = try? JSONDecoder().decode(LabRun.Served.self, from: Data(line.text.utf8))
                if served != nil { break }
            }
            var info = try #require(served, "serve printed no JSON line: \(server.stderrText)")
            var trust: [String] = []
            if let pki {
                let front = try await lab.startTLSFront(
                    certificate: pki.path("lab.crt"), key: pki.path("lab.key"),
                    portalCertificate: pki.path("wronghost.crt"), portalKey: pki.path("wronghost.key"),
                    backendPort: 8080)
                info.url = info.url.replacingOccurrences(of: "http://\(lab.gateway):8080", with: front)
                trust = ["--cacert", pki.path("ca.crt")]
            }
            let daemon = lab.onDevice([
                RepoPaths.binary, "daemon", "--state", directory.appendingPathComponent("state").path,
                "--socket", socket, "--policy", RepoPaths.file("policies/default.yaml"),
            ])
            let started = ContinuousClock.now
            _ = try await ChildProcess.run(daemon) { daemon in
                #expect(await eventually { FileManager.default.fileExists(atPath: socket) }, "\(daemon.stderrText)")
                let output = directory.appendingPathComponent("file.bin").path
                let add = try BinaryRun.run(
                    [
                        "add", info.url, "-o", output, "--sha256", info.sha256, "--json", "--socket", socket,
                    ] + trust)
                let id = try #require(
                    ((try? JSONSerialization.jsonObject(with: Data(add.stdout.utf8)) as? [String: Any])?["job"]
                        as? [String: Any])?["id"] as? String, "\(add.stdout) \(add.stderr)")
                func job() -> [String: Any] {
                    let status = try? BinaryRun.run(["status", id, "--json", "--socket", socket])
                    let object =
                        status.flatMap { try? JSONSerialization.jsonObject(with: Data($0.stdout.utf8)) }
                        as? [String: Any]
                    var job = (object?["job"] as? [String: Any]) ?? [:]
                    job["retry_reason"] = object?["retry_reason"]  // beside the job in the status
                    return job
                }
                try await body(info, job, started)
                daemon.terminate()
                await daemon.outputEnded()
            }
            server.terminate()
        }
    }

    @Test func daemonPausesWhenNetworkManagerSaysMeteredAndCompletesAfter() async throws {
        let lab = try await NetworkManagerLab.start()
        defer { lab.teardown() }
        try lab.setMetered("no")
        try await withDaemonJob(lab, size: "12MiB", rate: "1MiB/s") { info, job, _ in
            #expect(await eventually { (job()["bytes_done"] as? Int ?? 0) > 1 << 20 }, "no progress: \(job())")
            // NetworkManager marks the link metered; the kernel sees no change at all.
            try lab.setMetered("yes")
            #expect(await eventually { job()["state"] as? String == "waiting" }, "not paused: \(job())")
            #expect((job()["reason"] as? String ?? "").contains("networkmanager: yes"), "\(job())")
            let held = job()["bytes_done"] as? Int ?? 0
            #expect(held < 12 << 20)
            try lab.setMetered("no")
            #expect(
                await eventually(timeout: .seconds(40)) { job()["state"] as? String == "completed" },
                "did not complete: \(job())")
            #expect(job()["sha256"] as? String == info.sha256)
        }
    }

    /// NetworkManager's connectivity check finds a captive portal (its check URL redirected to a sign-in
    /// page): the running job stops within a second of NetworkManager saying so, naming the portal and the
    /// source; `links` shows it; NetworkManager says full again: the job resumes within a second and completes.
    @Test func daemonWaitsBehindACaptivePortalAndResumesWhenSignedIn() async throws {
        let lab = try await NetworkManagerLab.start(connectivityCheck: true)
        defer { lab.teardown() }
        try lab.setMetered("no")
        #expect(try lab.checkConnectivity() == "full")
        try await withDaemonJob(lab, size: "24MiB", rate: "512KiB/s") { info, job, started in
            #expect(await eventually { (job()["bytes_done"] as? Int ?? 0) > 1 << 20 }, "no progress: \(job())")
            // Past the policy's 5 s hysteresis since the daemon's first snapshot: the resume below is then held
            // by nothing but NetworkManager's word.
            try await Task.sleep(until: started + .seconds(6))
            try lab.setPortal(true)
            #expect(try lab.checkConnectivity() == "portal")
            let said = ContinuousClock.now
            #expect(await eventually(timeout: .seconds(5)) { job()["state"] as? String == "waiting" }, "\(job())")
            let paused = ContinuousClock.now - said
            #expect(paused < .seconds(1), "paused \(paused) after NetworkManager said portal")
            let reason = job()["reason"] as? String ?? ""
            #expect(reason.contains("captive portal on wlan0") && reason.contains("networkmanager"), "\(reason)")
            let links = try run(lab, ["links", "--json"])
            #expect(links.stdout.contains("\"connectivity\":\"portal\""), "\(links.stdout)")
            #expect((job()["bytes_done"] as? Int ?? 0) < 24 << 20)

            try lab.setPortal(false)
            #expect(try lab.checkConnectivity() == "full")
            let full = ContinuousClock.now
            #expect(await eventually(timeout: .seconds(5)) { job()["state"] as? String == "running" }, "\(job())")
            let resumed = ContinuousClock.now - full
            #expect(resumed < .seconds(1), "resumed \(resumed) after NetworkManager said full")
            #expect(
                await eventually(timeout: .seconds(40)) { job()["state"] as? String == "completed" },
                "did not complete: \(job())")
            #expect(job()["sha256"] as? String == info.sha256)
            #expect(job()["refetched_bytes"] as? Int == 0)
        }
    }

    /// An https job behind a hotel's portal that answers port 443 with its own certificate (issue 25): the
    /// portal comes up mid-download and cuts the connection before NetworkManager's next check, so the job
    /// meets the portal's certificate while the link still says full: a wait, not a failure. NetworkManager
    /// then says portal (the job waits, naming it); signed in, full: the job resumes and completes, sha256
    /// right, nothing fetched twice.
    @Test(.needsOpenSSL) func anHTTPSJobBehindAPortalWithItsOwnCertificateWaitsThenCompletes() async throws {
        let lab = try await NetworkManagerLab.start(connectivityCheck: true)
        defer { lab.teardown() }
        let pki = try TestPKI()
        defer { pki.remove() }
        try lab.setMetered("no")
        #expect(try lab.checkConnectivity() == "full")
        try await withDaemonJob(lab, size: "16MiB", rate: "512KiB/s", https: pki) { info, job, started in
            #expect(info.url.hasPrefix("https://"))
            #expect(await eventually { (job()["bytes_done"] as? Int ?? 0) > 1 << 20 }, "no progress: \(job())")
            try await Task.sleep(until: started + .seconds(6))

            // The session ends: the portal cuts the connection and answers 443 with its own certificate.
            try lab.setPortal(true)
            #expect(
                await eventually(timeout: .seconds(10)) {
                    (job()["retry_reason"] as? String ?? "").contains("a captive portal or proxy may be answering")
                }, "\(job())")
            try await Task.sleep(for: .seconds(2))
            #expect(job()["state"] as? String != "failed", "\(job())")

            #expect(try lab.checkConnectivity() == "portal")
            #expect(await eventually(timeout: .seconds(5)) { job()["state"] as? String == "waiting" }, "\(job())")
            #expect((job()["reason"] as? String ?? "").contains("captive portal on wlan0"), "\(job())")

            try lab.setPortal(false)
            #expect(try lab.checkConnectivity() == "full")
            #expect(
                await eventually(timeout: .seconds(60)) { job()["state"] as? String == "completed" },
                "did not complete: \(job())")
            #expect(job()["sha256"] as? String == info.sha256)
            #expect(job()["refetched_bytes"] as? Int == 0)
        }
    }
}
