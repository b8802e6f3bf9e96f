import Foundation
import Lab
import TestSupport
import Testing

/// Lab claims: the record's strict format, and the sweep against real namespaces and real processes in a
/// private claim directory (so no other lab's claims are involved).
struct LabClaimTests {
    @Test(arguments: [
        ("pid 42\nnamespace mwlab-dev-42-7\nnamespace mwlab-net-42-7\n", true),
        ("pid 42\n", true),
        ("namespace mwlab-dev-42-7\n", false),
        ("pid 0\n", false),
        ("pid 42\npid 43\n", false),
        ("pid 42\nnamespace ../../etc\n", false),
        ("pid 42\nnamespace -n\n", false),
        ("pid 42\nnamespace a b\n", false),
        ("pid 42\nowner root\n", false),
    ])
    func recordParsesStrictly(text: String, valid: Bool) {
        #expect((LabClaimRecord(parsing: text) != nil) == valid)
    }

    @Test func recordRoundTrips() {
        let record = LabClaimRecord(pid: 7, namespaces: ["mwlab-dev-7-1", "mwlab-net-7-1"])
        #expect(LabClaimRecord(parsing: record.text) == record)
    }

    func privateDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "mwclaims-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: false,
            attributes: [.posixPermissions: 0o700])
        return path
    }

    func start(_ argv: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = argv
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    @Test(.needsKernel) func sweepRemovesADeadLabsNamespacesAndProcessesAndNeverALiveOnes() async throws {
        let directory = try privateDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A lab that will die: a real process holds the claim's lock and a process runs inside its namespace.
        // One process holds the lock (flock(1) would pass it to its child, which outlives a SIGKILL of flock).
        let dead = try Netns.create(prefix: "mwclaimdead")
        defer { dead.delete() }
        let claimPath = directory + "/1-1.claim"
        let holder = try start([
            "python3", "-c",
            "import fcntl, sys, time\nf = open(sys.argv[1], 'a')\nfcntl.flock(f, fcntl.LOCK_EX)\ntime.sleep(600)",
            claimPath,
        ])
        defer { if holder.isRunning { kill(holder.processIdentifier, SIGKILL) } }
        #expect(await eventually { FileManager.default.fileExists(atPath: claimPath) && !LabClaim.isFree(claimPath) })
        try LabClaimRecord(pid: holder.processIdentifier, namespaces: [dead.name]).text
            .write(toFile: claimPath, atomically: false, encoding: .utf8)
        let inside = try start(["ip", "netns", "exec", dead.name, "sleep", "600"])
        defer { if inside.isRunning { kill(inside.processIdentifier, SIGKILL) } }
        #expect(await eventually { (try? dead.pids())?.contains(inside.processIdentifier) == true })
        // A live lab: this process's own claim, on a namespace it created.
        let liveName = Netns.uniqueName(prefix: "mwclaimlive")
        let live = try LabClaim.acquire(namespaces: [liveName], directory: directory)
        let liveNamespace = try Netns.create(name: liveName)
        defer {
            liveNamespace.delete()
            live.release()
        }

        // Both labs alive: nothing is removed.
        #expect(LabClaim.sweep(directory: directory).isEmpty)
        #expect(try Netns.exists(dead.name) && Netns.exists(liveName))

        // The holder dies as a SIGKILLed lab does: its namespace and the process in it go, the live one stays.
        kill(holder.processIdentifier, SIGKILL)
        // Foundation's waitUntilExit can miss an exit: wait for the lock to be free instead.
        #expect(await eventually { LabClaim.isFree(claimPath) })
        let removed = LabClaim.sweep(directory: directory)
        #expect(
            removed == [
                LabClaim.Removed(
                    namespace: dead.name, pid: holder.processIdentifier,
                    killed: [inside.processIdentifier])
            ])
        #expect(
            removed.first?.message.hasPrefix(
                "removed namespace \(dead.name) left by a lab that died (pid \(holder.processIdentifier))") == true)
        #expect(try !Netns.exists(dead.name))
        #expect(await eventually { !inside.isRunning }, "the process inside the dead lab's namespace still runs")
        #expect(!FileManager.default.fileExists(atPath: claimPath))
        #expect(try Netns.exists(liveName), "a live lab's namespace was removed")
        #expect(FileManager.default.fileExists(atPath: live.path))
    }
}
