import Foundation
import Lab
import RangeServer
import TestSupport
import Testing

/// The built binary's `serve` and `lab` commands, run the way the lab runs them.
@Suite struct LabCommandTests {
    func binaryOrSkip(_ test: String) -> String? {
        guard FileManager.default.isExecutableFile(atPath: RepoPaths.binary) else {
            skip(test, "\(RepoPaths.binary) is not built (swift build)")
            return nil
        }
        return RepoPaths.binary
    }

    @Test func servePrintsItsURLAndContentHashThenStopsOnSIGTERM() async throws {
        guard let binary = binaryOrSkip("servePrintsItsURLAndContentHashThenStopsOnSIGTERM") else { return }
        let server = try ChildProcess([binary, "serve", "--host", "127.0.0.1", "--port", "0", "--size", "1MiB",
                                       "--seed", "7"])
        defer { server.stop() }
        var served: LabRun.Served?
        for await line in server.lines {
            served = try? JSONDecoder().decode(LabRun.Served.self, from: Data(line.text.utf8))
            break
        }
        let info = try #require(served, "no JSON line: \(server.stderrText)")
        let content = RangeContent.generated(size: 1 << 20, seed: 7)
        #expect(info.sha256 == content.sha256Hex())
        #expect(info.size == 1 << 20)
        #expect(info.url.hasPrefix("http://127.0.0.1:") && info.url.hasSuffix("/file"))
        let fetched = try Command.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code} %{size_download}",
                                       info.url])
        #expect(fetched == "200 1048576")
        server.terminate()
        #expect(await server.waitForExit() == 0)
    }

    @Test func labWithoutRootSaysHowToRunIt() throws {
        guard let binary = binaryOrSkip("labWithoutRootSaysHowToRunIt") else { return }
        guard getuid() == 0, Command.exists("setpriv") else {
            skip("labWithoutRootSaysHowToRunIt", "needs root and setpriv to drop to nobody")
            return
        }
        let run = try BinaryRun.run(["--reuid", "65534", "--regid", "65534", "--clear-groups", binary, "lab"],
                                    executable: "/usr/bin/setpriv")
        guard !run.stderr.contains("Permission denied") else {
            skip("labWithoutRootSaysHowToRunIt", "nobody cannot run \(binary)")
            return
        }
        #expect(run.status == 77)
        #expect(run.stderr.contains("needs root") && run.stderr.contains("sudo"))
    }
}
