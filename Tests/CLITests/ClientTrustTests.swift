import Foundation
import TestSupport
import Testing

/// Root's client talks only to a daemon of root or of its caller: who answers is checked on the connection
/// (SO_PEERCRED) before anything is sent, not who owns the path (a symlink swapped between a check of the
/// path and the connect sent root's request, credentials included, to a user's listener).
@Suite(.serialized, .needsBinary, .needsOtherUser) struct ClientTrustTests {
    /// A listener run as nobody: appends whatever a client sends to `record`, and answers a forged `201`.
    static let plantedListener = """
        import os, socket, sys
        path, record = sys.argv[1], sys.argv[2]
        s = socket.socket(socket.AF_UNIX); s.bind(path); s.listen(16); os.chmod(path, 0o777)
        print("listening", flush=True)
        while True:
            c, _ = s.accept(); c.settimeout(2); data = b""
            try:
                data = c.recv(65536)
            except Exception:
                pass
            with open(record, "ab") as f: f.write(data)
            if data:
                c.sendall(b'HTTP/1.1 201 Created\\r\\nContent-Type: application/json\\r\\nContent-Length: 2\\r\\n\\r\\n{}')
            c.close()
        """

    @Test func rootsClientRefusesAListenerOfAnotherUserAndSendsItNothing() async throws {
        let (base, _, shared) = try SecurityTests.directories()
        defer { try? FileManager.default.removeItem(at: base) }
        let planted = shared.appendingPathComponent("planted.sock").path
        let record = shared.appendingPathComponent("received").path
        let listener = try LineCollector(
            SecurityTests.asNobody + ["/usr/bin/python3", "-c", Self.plantedListener, planted, record])
        defer { listener.stop() }
        #expect(await listener.waitForLine { $0 == "listening" } != nil)
        // The path's owner proves nothing: root's own, and the listener is still nobody's.
        #expect(chown(planted, 0, 0) == 0)
        let link = shared.appendingPathComponent("meterwise.sock").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: planted)

        let secret = "http://alice:s3cr3t@127.0.0.1:9/x.bin"
        let attempts: [(String, BinaryRun)] = [
            (
                "add --socket",
                try BinaryRun.run([
                    "add", secret, "-o", shared.appendingPathComponent("x.bin").path, "--socket", planted,
                ])
            ),
            ("list via a symlink", try BinaryRun.run(["list", "--socket", link])),
            (
                "status via $METERWISE_SOCKET",
                try BinaryRun.run(
                    ["METERWISE_SOCKET=" + link, RepoPaths.binary, "status"], executable: "/usr/bin/env")
            ),
            ("watch", try BinaryRun.run(["watch", "--socket", link])),
        ]
        for (what, run) in attempts {
            #expect(run.status != 0, "\(what): \(run.stdout)")
            #expect(run.stderr.contains("runs as uid \(SecurityTests.nobody)"), "\(what): \(run.stderr)")
            #expect(run.stderr.contains("nothing was sent"), "\(what): \(run.stderr)")
            #expect(!run.stdout.contains("added"), "\(what): \(run.stdout)")
        }
        listener.stop()
        let received = (try? Data(contentsOf: URL(fileURLWithPath: record))) ?? Data()
        #expect(received.isEmpty, "the listener received: \(String(decoding: received, as: UTF8.self))")

        // The real daemon (root's) is accepted, directly and through a symlink.
        let scenario = try DaemonProcess.scenario(in: base, DaemonProcess.wifiForAnHour)
        let daemon = try DaemonProcess(directory: base, scenario: scenario, extra: ["--group", "nogroup"])
        defer { daemon.kill(SIGTERM) }
        #expect(await daemon.waitUntilListening())
        #expect(try daemon.cli(["list"]).status == 0)
        let toDaemon = base.appendingPathComponent("link.sock").path
        try FileManager.default.createSymbolicLink(atPath: toDaemon, withDestinationPath: daemon.socket)
        let viaLink = try BinaryRun.run(["list", "--socket", toDaemon])
        #expect(viaLink.status == 0, "\(viaLink.stderr)")
        // nobody, too, talks to root's daemon.
        let nobody = try daemon.cliAsNobody(["list"])
        #expect(nobody.status == 0, "\(nobody.stderr)")
    }
}
