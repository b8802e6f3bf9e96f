import Foundation
import Lab
import TestSupport
import Testing

/// `meterwise lab` (the built binary) killed with SIGKILL: the next lab removes what it left, says so, and
/// leaves nothing of its own; a running lab's namespaces survive another lab's cleanup. Each test uses a
/// private claim directory (METERWISE_LAB_DIR), so the other lab tests running meanwhile do not sweep it.
@Suite(.needsBinary, .needsKernel) struct LabLeftoverTests {
    let binary = RepoPaths.binary

    func privateDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "mwlabclaims-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: false,
            attributes: [.posixPermissions: 0o700])
        return path
    }

    /// A two-link scenario; the lab runs until the downloader is done (or killed).
    func scenario(_ name: String) throws -> String {
        let path = NSTemporaryDirectory() + "\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).yaml"
        try """
        name: \(name)
        links:
          wlan0: { kind: wlan }
          wwan0: { kind: wwan }
        steps:
          - { at: 0s, up: [wlan0, wwan0], primary: wlan0 }
          - { at: 200ms, primary: wlan0 }
        """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The lab's two namespaces, from its "lab: namespaces DEV (device) and NET (internet)" line.
    func namespaces(in stderr: String) -> [String] {
        guard let line = stderr.split(separator: "\n").first(where: { $0.hasPrefix("lab: namespaces ") }) else {
            return []
        }
        return line.split(separator: " ").map(String.init).filter { $0.hasPrefix("mw") && $0.contains("-") }
    }

    /// Runs a long lab (256 MiB through an 8 mbit/s wlan0: minutes) until its downloader runs, then `body`.
    func withLongLab<T: Sendable>(claims: String, _ body: (ChildProcess, [String]) async throws -> T) async throws -> T
    {
        let file = try scenario("long")
        defer { try? FileManager.default.removeItem(atPath: file) }
        return try await ChildProcess.run(
            [
                "METERWISE_LAB_DIR=\(claims)", binary, "lab", file, "--downloader", "get", "--size", "256MiB",
                "--fast-rate", "8mbit", "--timeout", "600",
            ]
        ) { lab in
            #expect(
                await eventually(timeout: .seconds(60)) { lab.stderrText.contains("lab: engine started") },
                "the lab did not start its downloader: \(lab.stderrText)")
            let names = namespaces(in: lab.stderrText)
            try #require(names.count == 2, "no namespaces in: \(lab.stderrText)")
            return try await body(lab, names)
        }.value
    }

    /// Whether `pid` runs (exists and is not a zombie waiting for its parent).
    static func running(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        return !stat[close...].hasPrefix(") Z")
    }

    func shortLab(claims: String) throws -> BinaryRun {
        let file = try scenario("short")
        defer { try? FileManager.default.removeItem(atPath: file) }
        return try BinaryRun.run(
            ["lab", file, "--downloader", "get", "--size", "1MiB"], executable: binary,
            prefix: ["/usr/bin/env", "METERWISE_LAB_DIR=\(claims)"])
    }

    @Test func theNextLabRemovesTheNamespacesAndProcessesOfAKilledLabAndSaysSo() async throws {
        let claims = try privateDirectory()
        defer { try? FileManager.default.removeItem(atPath: claims) }
        let (pid, left, inside) = try await withLongLab(claims: claims) { lab, names in
            lab.kill()
            #expect(
                await eventually { !FileManager.default.fileExists(atPath: "/proc/\(lab.pid)/exe") },
                "the lab did not die")
            // SIGKILL gives no chance to clean up: the namespaces and the processes in them stay.
            let inside = names.flatMap { (try? Netns(name: $0).pids()) ?? [] }
            return (lab.pid, names.filter { (try? Netns.exists($0)) == true }, inside)
        }
        #expect(left.count == 2, "the killed lab's namespaces were not left behind")
        #expect(!inside.isEmpty, "no process was left in the killed lab's namespaces")
        defer { for name in left { Netns(name: name).delete() } }

        let next = try shortLab(claims: claims)
        #expect(next.status == 0, "\(next.stderr)")
        for name in left {
            #expect(
                next.stderr.contains("lab: removed namespace \(name) left by a lab that died (pid \(pid))"),
                "\(next.stderr)")
            #expect(try !Netns.exists(name), "\(name) left behind")
        }
        for process in inside { #expect(!Self.running(process), "process \(process) of the dead lab still runs") }
        for name in namespaces(in: next.stderr) { #expect(try !Netns.exists(name), "\(name) of the next lab left") }
        #expect(try FileManager.default.contentsOfDirectory(atPath: claims).isEmpty, "claims left behind")
    }

    @Test func aRunningLabsNamespacesSurviveAnotherLabsCleanup() async throws {
        let claims = try privateDirectory()
        defer { try? FileManager.default.removeItem(atPath: claims) }
        let names = try await withLongLab(claims: claims) { lab, names in
            let other = try shortLab(claims: claims)
            #expect(other.status == 0, "\(other.stderr)")
            #expect(!other.stderr.contains("removed namespace"), "\(other.stderr)")
            for name in names { #expect(try Netns.exists(name), "the running lab's \(name) was removed") }
            lab.terminate()
            await lab.outputEnded()
            return names
        }
        for name in names { #expect(try !Netns.exists(name), "\(name) left after SIGTERM") }
    }
}
