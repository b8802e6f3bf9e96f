import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `Type=notify`: the daemon tells a notification socket the test owns READY=1 after its first link
/// snapshot, STATUS= with a summary, RELOADING=1/READY=1 around a reload, STOPPING=1 on SIGTERM.
@Suite(.serialized) struct SystemdNotifyTests {
    /// A datagram socket bound in `directory`, as systemd's would be.
    final class NotifySocket: @unchecked Sendable {
        let path: String
        let fd: Int32

        init(directory: URL) throws {
            path = directory.appendingPathComponent("notify.sock").path
            fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            try #require(bound == 0, "bind \(path): errno \(errno)")
            var timeout = timeval(tv_sec: 15, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }

        deinit { close(fd) }

        /// The next datagram, or nil after 15 s.
        func next() -> String? {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            return n > 0 ? String(decoding: buffer.prefix(n), as: UTF8.self) : nil
        }

        /// Datagrams until one contains `text` (returned), or nil.
        func until(_ text: String) -> String? {
            while let message = next() {
                if message.contains(text) { return message }
            }
            return nil
        }
    }

    @Test func readyAfterTheFirstSnapshotStatusReloadAndStopping() async throws {
        let directory = URL(fileURLWithPath: "/tmp/mwn-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let notify = try NotifySocket(directory: directory)
        let scenario = try DaemonProcess.scenario(in: directory, DaemonProcess.cellularForAnHour)
        let daemon = try DaemonProcess(
            directory: directory, scenario: scenario, environment: ["NOTIFY_SOCKET": notify.path])
        defer { daemon.kill(SIGKILL) }
        let ready = try #require(notify.until("READY=1"), "no READY=1")
        // READY comes with the first snapshot's summary: the primary uplink is known.
        #expect(ready.contains("STATUS=0 running, 0 waiting: metered wwan0"), "\(ready)")

        Foundation.kill(daemon.process.processIdentifier, SIGHUP)
        let reloading = try #require(notify.until("RELOADING=1"), "no RELOADING=1")
        #expect(reloading.contains("MONOTONIC_USEC="))
        #expect(notify.until("READY=1") != nil, "no READY=1 after the reload")

        daemon.kill(SIGTERM)
        let stopping = try #require(notify.until("STOPPING=1"), "no STOPPING=1")
        #expect(stopping.contains("STATUS=stopping"))
        #expect(await eventually { !daemon.process.isRunning })
        #expect(daemon.process.terminationStatus == 0)
    }

    /// With stderr the journal's stream (`JOURNAL_STREAM` names its device and inode), every line carries
    /// its syslog priority; a `JOURNAL_STREAM` naming another file changes nothing.
    @Test func logLinesCarryPrioritiesForTheJournal() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mwj-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        func run(matching: Bool) throws -> String {
            let path = directory.appendingPathComponent("stderr-\(matching)").path
            try #require(FileManager.default.createFile(atPath: path, contents: nil))
            let handle = try #require(FileHandle(forWritingAtPath: path))
            var info = stat()
            fstat(handle.fileDescriptor, &info)
            let scenario = try DaemonProcess.scenario(in: directory, DaemonProcess.wifiForAnHour)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: RepoPaths.binary)
            process.arguments = [
                "daemon", "--links", "scenario", "--scenario", scenario,
                "--state", directory.appendingPathComponent("state-\(matching)").path,
                "--socket", directory.appendingPathComponent("d-\(matching).sock").path,
                "--policy", RepoPaths.file("policies/default.yaml"),
            ]
            process.environment = ProcessInfo.processInfo.environment.merging(
                [
                    "JOURNAL_STREAM": "\(info.st_dev):\(matching ? info.st_ino : info.st_ino + 1)",
                    "METERWISE_LOG": "info",
                ]) { _, new in new }
            process.standardError = handle
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            let socket = directory.appendingPathComponent("d-\(matching).sock").path
            let deadline = Date().addingTimeInterval(15)
            while !FileManager.default.fileExists(atPath: socket) && Date() < deadline { usleep(20_000) }
            process.terminate()
            process.waitUntilExit()
            try handle.close()
            return try String(contentsOfFile: path, encoding: .utf8)
        }
        let journal = try run(matching: true)
        let plain = try run(matching: false)
        #expect(plain.contains("meterwise.daemon"), "\(plain)")
        #expect(!plain.contains("<6>"), "\(plain)")
        #expect(journal.contains("<6>meterwise.daemon: meterwise"), "\(journal)")
        let logged = journal.split(separator: "\n").filter { $0.contains("meterwise.") }
        #expect(!logged.isEmpty && logged.allSatisfy { $0.hasPrefix("<") }, "\(journal)")
    }
}
