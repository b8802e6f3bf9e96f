import Engine
import Foundation
import MeterwiseClient
import Policy
import TestSupport
import Testing
import Transfer

/// A delta job in the daemon (docs/delta.md): once its seeds are scanned, the policy and the budgets see the
/// bytes it still has to fetch, not the file's length.
@Suite(.serialized, .needsNginx, .needsZsync)
struct DeltaJobTests {
    /// The laptop policy's rules for metered links, with a budget on the small-files rule.
    static let policy = """
        version: 1
        defaults: { resume_after: 1s, action: pause }
        rules:
          - name: unmetered
            when: { metered: no }
            action: run
          - name: small-files-on-metered
            when: { metered: yes, size: "< 20MiB" }
            action: run
            via: any
            budget: { name: cell, bytes: 50MiB, period: daily }
          - name: everything-else-waits
            when: { metered: yes }
            action: pause
        """

    /// 24 MiB, and its next version: 5 % of the 2 KiB blocks changed in runs, one insertion.
    static func versions() -> (old: Data, new: Data) {
        var random = SplitMix(seed: 31)
        var old = [UInt8](repeating: 0, count: 24 << 20)
        old.withUnsafeMutableBytes { raw in
            let words = raw.bindMemory(to: UInt64.self)
            for i in 0..<words.count { words[i] = random.next() }
        }
        var new = old
        let blocks = new.count / 2048
        var changed = 0
        while changed < blocks / 20 {
            let run = Int.random(in: 1...6, using: &random)
            let at = Int.random(in: 0..<(blocks - run), using: &random) * 2048
            for k in at..<at + run * 2048 { new[k] = UInt8.random(in: 0...255, using: &random) }
            changed += run
        }
        new.insert(contentsOf: [UInt8](repeating: 7, count: 999), at: 3_000_000)
        return (Data(old), Data(new))
    }

    /// Serves `new` and its control file (zsyncmake) from nginx at 200 KiB/s (slow enough that a link changes
    /// while the delta is fetched), puts `old` at the destination and adds a delta job on Wi-Fi.
    static func addDeltaJob(_ h: EngineHarness, old: Data, new: Data) async throws -> (Nginx, String, JobRecord) {
        let root = h.directory.appendingPathComponent("www").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: root + "/image.bin", contents: new)
        let make = Process()
        make.executableURL = URL(fileURLWithPath: TestNeeds.zsyncmake!)
        make.arguments = ["-b", "2048", "-u", "image.bin", "-o", root + "/image.bin.zsync", root + "/image.bin"]
        make.currentDirectoryURL = URL(fileURLWithPath: root)
        try make.run()
        make.waitUntilExit()
        let nginx = try Nginx(root: root, location: "limit_rate 200k;")
        let destination = h.directory.appendingPathComponent("image.bin").path
        _ = FileManager.default.createFile(atPath: destination, contents: old)
        h.monitor.send(up: ["wlan0"], primary: "wlan0")
        var spec = JobSpec(url: nginx.url("/image.bin"), destination: destination)
        spec.zsync = true
        do {
            return (nginx, destination, try await h.engine.add(spec))
        } catch {
            nginx.stop()
            throw error
        }
    }

    @Test func aSmallDeltaOfALargeFileRunsOnCellularAndCountsItsBytes() async throws {
        let (old, new) = Self.versions()
        let h = try await EngineHarness(policy: Self.policy)
        try await h.use { h in
            let (nginx, destination, job) = try await Self.addDeltaJob(h, old: old, new: new)
            defer { nginx.stop() }
            #expect(job.zsync == "")
            // Scanned on Wi-Fi: what is left is about 6 % of the file.
            #expect(try await h.until { try await h.engine.status(job.id).job.deltaBytes != nil })
            let planned = try #require(try await h.engine.status(job.id).job.deltaBytes)
            #expect(planned > 0 && planned < 20 << 20, "planned \(planned)")
            #expect(try await h.engine.status(job.id).job.totalBytes == Int64(new.count))
            // On cellular the decision is made on the delta's size: it goes on.
            h.monitor.send(up: ["wlan0", "wwan0"], primary: "wwan0")
            #expect(
                try await h.until {
                    let status = try await h.engine.status(job.id)
                    return status.job.state == .running && status.job.rule == "small-files-on-metered"
                        || status.job.state == .completed
                })
            #expect(try await h.until(timeout: .seconds(60)) { try await h.state(job.id) == .completed })
            let done = try await h.engine.status(job.id)
            #expect(FileManager.default.contents(atPath: destination) == new)
            #expect(done.job.bytesFetched < Int64(new.count) / 10, "fetched \(done.job.bytesFetched)")
            // The budget counted the delta's bytes fetched on cellular, no more than it fetched in all.
            let used = h.engine.accounting.usage.bytes.values.max() ?? 0
            #expect(used > 0 && used <= done.job.bytesFetched, "budget \(used), fetched \(done.job.bytesFetched)")
        }
    }

    @Test func aLargerDeltaPausesOnCellularAndResumesOnWiFiWithNothingFetchedTwice() async throws {
        let (old, new) = Self.versions()
        // The same rules, with "small" under 1 MiB: this delta (about 1.5 MiB) is not small.
        let h = try await EngineHarness(policy: Self.policy.replacingOccurrences(of: "< 20MiB", with: "< 1MiB"))
        try await h.use { h in
            let (nginx, destination, job) = try await Self.addDeltaJob(h, old: old, new: new)
            defer { nginx.stop() }
            #expect(try await h.until { try await h.engine.status(job.id).job.bytesFetched > 300_000 })
            let planned = try #require(try await h.engine.status(job.id).job.deltaBytes)
            h.monitor.send(up: ["wlan0", "wwan0"], primary: "wwan0")
            #expect(try await h.until { try await h.state(job.id) == .waiting })
            #expect(try await h.engine.status(job.id).job.rule == "everything-else-waits")
            h.monitor.send(up: ["wlan0"], primary: "wlan0")
            // The policy's resume_after (1 s) on the engine's clock.
            #expect(
                try await h.until(timeout: .seconds(60)) {
                    h.clock.advance(by: .milliseconds(500))
                    return try await h.state(job.id) == .completed
                })
            let done = try await h.engine.status(job.id)
            #expect(FileManager.default.contents(atPath: destination) == new)
            // Both runs fetched the plan once: what the pause left unread and a block per connection aside.
            #expect(
                done.job.bytesFetched <= planned + 512 << 10, "planned \(planned), fetched \(done.job.bytesFetched)")
        }
    }

    @Test func theSameFileWithoutADeltaWaitsOnCellular() async throws {
        let (_, new) = Self.versions()
        let h = try await EngineHarness(policy: Self.policy)
        try await h.use { h in
            let root = h.directory.appendingPathComponent("www").path
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: root + "/image.bin", contents: new)
            let nginx = try Nginx(root: root, location: "limit_rate 2m;")
            defer { nginx.stop() }
            h.monitor.send(up: ["wlan0"], primary: "wlan0")
            let job = try await h.engine.add(
                JobSpec(url: nginx.url("/image.bin"), destination: h.directory.appendingPathComponent("i.bin").path))
            #expect(try await h.until { try await h.engine.status(job.id).job.totalBytes != nil })
            h.monitor.send(up: ["wlan0", "wwan0"], primary: "wwan0")
            #expect(try await h.until { try await h.state(job.id) == .waiting })
            #expect(try await h.engine.status(job.id).job.rule == "everything-else-waits")
        }
    }

    @Test func seedsAndControlFilesAreChecked() async throws {
        var spec = JobSpec(url: "http://127.0.0.1:1/x", destination: "/tmp/x")
        spec.seeds = ["/tmp/old"]
        #expect(spec.problem?.contains("seeds need zsync") == true)
        spec.zsync = true
        spec.seeds = ["relative/old"]
        #expect(spec.problem == "each seed must be an absolute path")
        spec.seeds = ["/proc/self/fd/3"]
        #expect(spec.problem == "a seed may not be under /proc")
        spec.seeds = Array(repeating: "/tmp/a", count: 17)
        #expect(spec.problem?.contains("at most 16") == true)
        spec.seeds = []
        spec.zsyncURL = "ftp://x/y.zsync"
        #expect(spec.problem == "zsync_url must be an http(s) URL or an absolute path")
        spec.zsyncURL = "https://x/y.zsync"
        #expect(spec.problem == nil)
    }
}
