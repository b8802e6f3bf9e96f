import Foundation
import Lab
import Links
import NetlinkLinks
import Synchronization
import TestSupport
import Testing

/// The real libnl monitor in a real namespace, with failures injected at its open, dump and receive points
/// (`NetlinkFaults`): it reopens and reads everything again after a failure, and gives up with a clear
/// error when failures go on.
@Suite(.needsKernel) struct NetlinkRecoveryKernelTests {
    /// Fails at each point as many times as it is told, once armed; counts what it threw.
    final class ScriptedFaults: Sendable {
        let remaining = Mutex<[NetlinkFaults.Point: Int]>([:])
        let thrown = Mutex<[NetlinkFaults.Point]>([])

        func arm(_ script: [NetlinkFaults.Point: Int]) { remaining.withLock { $0 = script } }

        var faults: NetlinkFaults {
            NetlinkFaults { point in
                let fail = self.remaining.withLock { remaining in
                    guard let left = remaining[point], left > 0 else { return false }
                    remaining[point] = left == Int.max ? left : left - 1
                    return true
                }
                guard fail else { return nil }
                self.thrown.withLock { $0.append(point) }
                return NetlinkError(.injected, "injected failure at \(point)")
            }
        }
    }

    final class Recorder: Sendable {
        let snapshots = Mutex<[LinkSnapshot]>([])
        let ending = Mutex<(any Error)??>(nil)
        var latest: LinkSnapshot? { snapshots.withLock { $0.last } }
    }

    func watch(_ monitor: NetlinkLinkMonitor, into recorder: Recorder) -> Task<Void, Never> {
        let stream = monitor.snapshots()
        return Task {
            do {
                for try await snapshot in stream { recorder.snapshots.withLock { $0.append(snapshot) } }
                recorder.ending.withLock { $0 = .some(nil) }
            } catch {
                recorder.ending.withLock { $0 = .some(error) }
            }
        }
    }

    @Test func recoversFromTransientFailuresAndStillSeesLaterChanges() async throws {
        let uplinks = try VethUplinks.create(prefix: "mwnlrec")
        defer { uplinks.delete() }
        let scripted = ScriptedFaults()
        let monitor = NetlinkLinkMonitor(
            namespacePath: uplinks.device.path,
            recovery: .init(firstDelay: .milliseconds(20), maxDelay: .milliseconds(200)), faults: scripted.faults)
        let recorder = Recorder()
        let consumer = watch(monitor, into: recorder)
        defer { consumer.cancel() }
        #expect(await eventually { recorder.latest?.primary?.name == "wlan0" }, "no initial snapshot")

        // The next receive fails; then two reopens fail to open and one fails to dump; the fourth works.
        scripted.arm([.receive: 1, .open: 2, .dump: 1])
        try uplinks.device.ip("link", "set", "wlan0", "down")
        #expect(
            await eventually(timeout: .seconds(10)) { recorder.latest?.primary?.name == "wwan0" },
            "the change during the failures was not read again after the reopen")
        #expect(scripted.thrown.withLock { $0 } == [.receive, .open, .open, .dump])

        // Monitoring goes on: a later change is followed by events.
        try uplinks.device.ip("link", "set", "wlan0", "up")
        try uplinks.device.ip("route", "add", "default", "via", "10.77.1.1", "dev", "wlan0", "metric", "100")
        #expect(await eventually { recorder.latest?.primary?.name == "wlan0" }, "a later change was missed")
        #expect(recorder.ending.withLock { $0 } == nil, "the stream ended")
        let sequences = recorder.snapshots.withLock { $0.map(\.sequence) }
        #expect(sequences == Array(1...UInt64(sequences.count)), "sequence numbers must stay consecutive")
    }

    @Test func givesUpWithAClearErrorWhenFailuresGoOn() async throws {
        let uplinks = try VethUplinks.create(prefix: "mwnlgiveup")
        defer { uplinks.delete() }
        let scripted = ScriptedFaults()
        let monitor = NetlinkLinkMonitor(
            namespacePath: uplinks.device.path,
            recovery: .init(
                firstDelay: .milliseconds(10), maxDelay: .milliseconds(40), maxFailures: 5,
                window: .milliseconds(200)),
            faults: scripted.faults)
        let recorder = Recorder()
        let consumer = watch(monitor, into: recorder)
        defer { consumer.cancel() }
        #expect(await eventually { recorder.latest != nil }, "no initial snapshot")

        // Every receive and every reopen fails from now on.
        scripted.arm([.receive: .max, .open: .max])
        try uplinks.device.ip("link", "set", "wlan0", "down")
        #expect(await eventually(timeout: .seconds(10)) { recorder.ending.withLock { $0 } != nil }, "never gave up")
        let ending = recorder.ending.withLock { $0 }
        let error = (ending ?? nil) as? NetlinkError
        #expect(error?.code == .gaveUp)
        #expect(error?.message.contains("injected failure at open") == true, "\(String(describing: error))")
        #expect(error?.message.contains("service manager restarts") == true)
        #expect(scripted.thrown.withLock { $0.count } >= 5)
    }

    @Test func aFailureBeforeTheFirstSnapshotIsThrownAtOnce() async throws {
        let namespace = try Netns.create(prefix: "mwnlfirst")
        defer { namespace.delete() }
        let scripted = ScriptedFaults()
        scripted.arm([.dump: 1])
        let stream = NetlinkLinkMonitor(namespacePath: namespace.path, faults: scripted.faults).snapshots()
        await #expect(throws: NetlinkError.self) {
            for try await _ in stream {}
        }
    }
}
