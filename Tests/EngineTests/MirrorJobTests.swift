import Crypto
import Engine
import Foundation
import MeterwiseClient
import TestSupport
import Testing
import Transfer

/// A job with several sources in the daemon (docs/mirrors.md): it fetches from all of them, the status lists
/// them, and one that serves a bad piece is dropped with the reason.
@Suite(.serialized, .needsNginx)
struct MirrorJobTests {
    static let policy = """
        version: 1
        defaults: { resume_after: 1s, action: pause }
        rules:
          - name: unmetered
            when: { metered: no }
            action: run
        """

    @Test func aJobFromThreeMirrorsWithAMetalinkFileDropsTheOneWithABadPiece() async throws {
        let h = try await EngineHarness(policy: Self.policy)
        try await h.use { h in
            var random = SplitMix(seed: 51)
            var content = [UInt8](repeating: 0, count: 8 << 20)
            content.withUnsafeMutableBytes { raw in
                let words = raw.bindMemory(to: UInt64.self)
                for i in 0..<words.count { words[i] = random.next() }
            }
            var bad = content
            for i in (2 << 20)..<(3 << 20) { bad[i] ^= 0xff }
            var servers: [Nginx] = []
            defer { for s in servers { s.stop() } }
            for (i, bytes) in [content, content, bad].enumerated() {
                let root = h.directory.appendingPathComponent("www\(i)").path
                try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
                _ = FileManager.default.createFile(atPath: root + "/f.bin", contents: Data(bytes))
                servers.append(try Nginx(root: root, location: "limit_rate 2m;"))
            }
            // The Metalink file: whole-file and 1 MiB piece sha-256, and the third mirror's URL.
            let hex = { (d: [UInt8]) in d.map { String(format: "%02x", $0) }.joined() }
            var pieces = ""
            for at in stride(from: 0, to: content.count, by: 1 << 20) {
                pieces +=
                    "<hash>\(hex(Array(SHA256.hash(data: content[at..<min(content.count, at + (1 << 20))]))))</hash>"
            }
            let meta4 = h.directory.appendingPathComponent("f.meta4").path
            try """
            <?xml version="1.0" encoding="UTF-8"?>
            <metalink xmlns="urn:ietf:params:xml:ns:metalink"><file name="f.bin"><size>\(content.count)</size>
            <hash type="sha-256">\(hex(Array(SHA256.hash(data: content))))</hash>
            <pieces length="1048576" type="sha-256">\(pieces)</pieces>
            <url priority="1">\(servers[2].url("/f.bin"))</url></file></metalink>
            """.write(toFile: meta4, atomically: true, encoding: .utf8)
            h.monitor.send(up: ["wlan0"], primary: "wlan0")
            let destination = h.directory.appendingPathComponent("f.bin").path
            var spec = JobSpec(url: servers[0].url("/f.bin"), destination: destination)
            spec.mirrors = [servers[1].url("/f.bin")]
            spec.metalink = meta4
            let job = try await h.engine.add(spec)
            #expect(job.mirrors == [servers[1].url("/f.bin")])
            #expect(try await h.until(timeout: .seconds(60)) { try await h.state(job.id) == .completed })
            #expect(FileManager.default.contents(atPath: destination) == Data(content))
            let status = try await h.engine.status(job.id)
            let sources = try #require(status.job.sources)
            #expect(Set(sources.map(\.url)) == Set(servers.map { $0.url("/f.bin") }))
            #expect(sources.reduce(0) { $0 + $1.bytes } == Int64(content.count))
            // The third mirror is dropped only if it was asked for the bad piece; then the reason names it.
            if let dropped = sources.first(where: { $0.dropped != nil }) {
                #expect(dropped.url == servers[2].url("/f.bin"))
                #expect(dropped.dropped?.contains("piece 2") == true, "\(dropped)")
            }
            #expect(status.job.bytesFetched <= Int64(content.count) + 3 << 20)
        }
    }

    @Test func mirrorsAreCheckedWhenTheJobIsAdded() async throws {
        let h = try await EngineHarness(policy: Self.policy)
        try await h.use { h in
            var spec = JobSpec(url: "http://127.0.0.1:9/f", destination: h.directory.appendingPathComponent("f").path)
            spec.mirrors = ["ftp://127.0.0.1/f"]
            await #expect(throws: EngineError.self) { try await h.engine.add(spec) }
            spec.mirrors = nil
            spec.metalink = "relative.meta4"
            await #expect(throws: EngineError.self) { try await h.engine.add(spec) }
            spec.metalink = nil
            spec.zsync = true
            spec.mirrors = ["http://127.0.0.1:9/g"]
            await #expect(throws: EngineError.self) { try await h.engine.add(spec) }
        }
    }
}
