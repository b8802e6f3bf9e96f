import Foundation
import TestSupport
import Testing

@testable import Transfer

/// Delta downloads against a real nginx, with control files made by Debian's zsyncmake.
@Suite(.serialized, .needsNginx, .needsZsync)
struct DeltaTests {
    /// The old and new versions of a 6 MiB image: 5 % of the 2 KiB blocks changed in runs, two insertions
    /// and a deletion that shift what follows.
    static func versions() -> (old: [UInt8], new: [UInt8]) {
        let old = DeltaScanTests.bytes(6 << 20, seed: 21)
        var new = old
        var random = SplitMix(seed: 22)
        let blocks = new.count / 2048
        var changed = 0
        while changed < blocks / 20 {
            let run = Int.random(in: 1...6, using: &random)
            let at = Int.random(in: 0..<(blocks - run), using: &random) * 2048
            new.replaceSubrange(at..<at + run * 2048, with: DeltaScanTests.bytes(run * 2048, seed: UInt64(at)))
            changed += run
        }
        new.insert(contentsOf: DeltaScanTests.bytes(1234, seed: 23), at: 1_000_000)
        new.insert(contentsOf: DeltaScanTests.bytes(77, seed: 24), at: 4_000_000)
        new.removeSubrange(5_000_000..<5_003_000)
        return (old, new)
    }

    struct Setup {
        var nginx: Nginx
        var fixture: Fixture
        var newSHA: String
        var newCount: Int
        var url: String { nginx.url("/new.img") }
        var log: String { nginx.prefix + "/logs/access.log" }
        var old: String { fixture.path("old.img") }
    }

    static func withVersions(location: String = "", control: Bool = true, _ body: (Setup) async throws -> Void)
        async throws
    {
        let fixture = Fixture()
        defer { fixture.remove() }
        let root = fixture.path("www")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let (old, new) = versions()
        _ = FileManager.default.createFile(atPath: root + "/new.img", contents: Data(new))
        _ = FileManager.default.createFile(atPath: fixture.path("old.img"), contents: Data(old))
        if control {
            let make = Process()
            make.executableURL = URL(fileURLWithPath: TestNeeds.zsyncmake!)
            make.arguments = ["-b", "2048", "-o", root + "/new.img.zsync", "-u", "new.img", root + "/new.img"]
            make.currentDirectoryURL = URL(fileURLWithPath: root)
            try make.run()
            make.waitUntilExit()
            #expect(make.terminationStatus == 0)
        }
        let nginx = try Nginx(root: root, location: location)
        defer { nginx.stop() }
        try await body(
            Setup(
                nginx: nginx, fixture: fixture, newSHA: Fixture.sha256(bytes: new), newCount: new.count))
    }

    /// The Range headers nginx logged for the image.
    static func ranges(in log: String) -> [String] {
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").filter { $0.contains("GET /new.img ") }.compactMap { line in
            line.components(separatedBy: "\"").first { $0.hasPrefix("bytes=") }
        }
    }

    func request(_ setup: Setup, seeds: [String]) -> DownloadRequest {
        var request = DownloadRequest(url: setup.url, destination: setup.fixture.path("out.img"))
        request.computeSHA256 = true
        request.delta = DeltaSource(seeds: seeds)
        return request
    }

    @Test func fetchesOnlyWhatChangedWithMultiRangeRequests() async throws {
        try await Self.withVersions { setup in
            let (outcome, events) = try await Fixture.runCollecting(
                Download(request: request(setup, seeds: [setup.old])))
            let result = try #require(outcome.result)
            #expect(result.sha256 == setup.newSHA)
            #expect(Fixture.sha256(file: setup.fixture.path("out.img")) == setup.newSHA)
            // 5 % changed in runs, three shifts: about 6 % to fetch, and never the whole file.
            #expect(result.bytesFetched < Int64(setup.newCount) / 10, "fetched \(result.bytesFetched)")
            #expect(result.resumedBytes > Int64(setup.newCount) * 85 / 100)
            #expect(result.refetchedBytes == 0)
            let planned = events.compactMap { event -> Int64? in
                if case .delta(.planned(let toFetch, _, _)) = event { return toFetch }
                return nil
            }
            #expect(planned.count == 1)
            #expect(result.bytesFetched >= planned[0])
            let ranges = Self.ranges(in: setup.log)
            #expect(ranges.contains { $0.contains(",") }, "several ranges per request: \(ranges.prefix(3))")
            #expect(!Fixture.exists(setup.fixture.path("out.img.delta-part")))
        }
    }

    @Test func theOldVersionAtTheDestinationIsTheSeedAndIsReplaced() async throws {
        try await Self.withVersions { setup in
            let destination = setup.fixture.path("out.img")
            try FileManager.default.copyItem(atPath: setup.old, toPath: destination)
            let (outcome, _) = try await Fixture.runCollecting(Download(request: request(setup, seeds: [])))
            let result = try #require(outcome.result)
            #expect(result.sha256 == setup.newSHA)
            #expect(Fixture.sha256(file: destination) == setup.newSHA)
            #expect(result.bytesFetched < Int64(setup.newCount) / 10)
        }
    }

    /// A delta refused because another kind of download writes the same output leaves nothing of its own: no
    /// partial file and no copy of the control file.
    @Test func aRefusedDeltaLeavesNoCopyOfTheControlFile() async throws {
        try await Self.withVersions(location: "limit_rate 256k;") { setup in
            let destination = setup.fixture.path("out.img")
            let whole = Download(request: DownloadRequest(url: setup.url, destination: destination))
            async let outcome = whole.run()
            for await event in whole.events {
                if case .progress(let p) = event, p.bytesDone > 0 { break }
            }
            do throws(TransferError) {
                _ = try await Download(request: request(setup, seeds: [setup.old])).run()
                Issue.record("a delta of an output another download writes ran")
            } catch {
                #expect(error.code == .outputBusy, "\(error.message)")
            }
            #expect(!Fixture.exists(destination + ".delta-part"))
            #expect(!Fixture.exists(destination + ".delta-part.zsync"), "the refused delta left its control file")
            await whole.cancel()
            _ = try? await outcome
        }
    }

    @Test func aPausedDeltaResumesWithNothingFetchedTwice() async throws {
        try await Self.withVersions(location: "limit_rate 256k;") { setup in
            let request = request(setup, seeds: [setup.old])
            let (first, firstEvents) = try await Fixture.runPausing(Download(request: request), at: 0)
            #expect(first == .paused)
            let partial = setup.fixture.path("out.img.delta-part")
            #expect(Fixture.exists(partial))
            let planned =
                firstEvents.compactMap { event -> Int64? in
                    if case .delta(.planned(let toFetch, _, _)) = event { return toFetch }
                    return nil
                }.first ?? 0
            let fetchedFirst =
                firstEvents.compactMap { event -> Int64? in
                    if case .paused(let p) = event { return p.bytesFetched }
                    return nil
                }.first ?? 0
            let (second, events) = try await Fixture.runCollecting(Download(request: request))
            let result = try #require(second.result)
            #expect(result.sha256 == setup.newSHA)
            #expect(events.contains { if case .delta(.resumed) = $0 { return true } else { return false } })
            // The control file kept beside the partial was still the server's: a 304, not 2 MiB again.
            let log = (try? String(contentsOfFile: setup.log, encoding: .utf8)) ?? ""
            #expect(
                log.split(separator: "\n").contains { $0.contains("GET /new.img.zsync ") && $0.contains("\" 304 ") })
            #expect(!Fixture.exists(setup.fixture.path("out.img.delta-part.zsync")))
            // What the first run wrote is found in place: the two runs fetch the plan once, give or take the
            // block each connection was in the middle of (2 KiB) and the multipart framing.
            let both = fetchedFirst + result.bytesFetched
            #expect(
                both <= planned + 4 * 2048 + 64 * 1024,
                "planned \(planned), fetched \(fetchedFirst) + \(result.bytesFetched)")
        }
    }

    @Test func withoutAControlFileItDownloadsTheWholeFileAndSaysSo() async throws {
        try await Self.withVersions(control: false) { setup in
            let (outcome, events) = try await Fixture.runCollecting(
                Download(request: request(setup, seeds: [setup.old])))
            let result = try #require(outcome.result)
            #expect(result.sha256 == setup.newSHA)
            #expect(result.bytesFetched == Int64(setup.newCount))
            #expect(
                events.contains {
                    if case .warning(let text) = $0 { return text.contains("no control file") && text.contains("404") }
                    return false
                })
        }
    }

    @Test func aServerThatAnswersSeveralRangesWithTheWholeFileGetsSingleRanges() async throws {
        // nginx with max_ranges 1 answers a request for several ranges as if it had none: 200, the whole file.
        try await Self.withVersions(location: "max_ranges 1;") { setup in
            let (outcome, _) = try await Fixture.runCollecting(Download(request: request(setup, seeds: [setup.old])))
            let result = try #require(outcome.result)
            #expect(result.sha256 == setup.newSHA)
            #expect(result.bytesFetched < Int64(setup.newCount) / 10, "fetched \(result.bytesFetched)")
        }
    }

    @Test func aControlFileForAnotherVersionFallsBackToTheWholeFile() async throws {
        try await Self.withVersions { setup in
            // The image grows after its control file was made.
            let handle = try #require(FileHandle(forWritingAtPath: setup.nginx.root + "/new.img"))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data([1, 2, 3]))
            try handle.close()
            let sha = try #require(Fixture.sha256(file: setup.nginx.root + "/new.img"))
            let (outcome, events) = try await Fixture.runCollecting(
                Download(request: request(setup, seeds: [setup.old])))
            #expect(outcome.result?.sha256 == sha)
            #expect(
                events.contains {
                    if case .warning(let text) = $0 { return text.contains("another version") }
                    return false
                })
        }
    }

    @Test func aMalformedControlFileIsAClearError() async throws {
        try await Self.withVersions { setup in
            _ = FileManager.default.createFile(
                atPath: setup.nginx.root + "/new.img.zsync", contents: Data("<html>Sign in</html>\n\n".utf8))
            let download = Download(request: request(setup, seeds: [setup.old]))
            await #expect {
                _ = try await download.run()
            } throws: { error in
                (error as? TransferError)?.code == .controlFile
            }
            #expect(!Fixture.exists(setup.fixture.path("out.img")))
        }
    }

    @Test func theCommandTakesTheControlFileAsAnOptionalValue() async throws {
        try await Self.withVersions { setup in
            // The control file under another name, given after --zsync; the old copy at -o.
            try FileManager.default.moveItem(
                atPath: setup.nginx.root + "/new.img.zsync", toPath: setup.nginx.root + "/control.zsync")
            let out = setup.fixture.path("cli.img")
            try FileManager.default.copyItem(atPath: setup.old, toPath: out)
            let run = try BinaryRun.run([
                "get", setup.url, "-o", out, "--zsync", setup.nginx.url("/control.zsync"), "--json",
            ])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(Fixture.sha256(file: out) == setup.newSHA)
            #expect(run.stdout.contains("\"stage\":\"planned\""))
            let last = run.stdout.split(separator: "\n").last.map(String.init) ?? ""
            #expect(last.contains("\"state\":\"completed\""))
            // --seed without --zsync is a usage error; a control file that is not one is exit 65.
            let usage = try BinaryRun.run(["get", setup.url, "-o", out, "--seed", setup.old])
            #expect(usage.status == 64)
            #expect(usage.stderr.contains("--seed needs --zsync"))
            let bad = setup.fixture.path("bad.zsync")
            _ = FileManager.default.createFile(atPath: bad, contents: Data("zsync: 0.6.2\nBlocksize: 7\n\n".utf8))
            let malformed = try BinaryRun.run(["get", setup.url, "-o", out, "--zsync=\(bad)"])
            #expect(malformed.status == 65)
            #expect(malformed.stderr.contains("bad.zsync:2: Blocksize `7`"))
        }
    }

    /// The server's file changed in one block after its control file was made (the length is the same).
    static func corrupt(_ setup: Setup, at offset: Int) throws {
        let handle = try #require(FileHandle(forWritingAtPath: setup.nginx.root + "/new.img"))
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: Data(repeating: 0x5A, count: 100))
        try handle.close()
    }

    @Test func aFetchedBlockThatDoesNotMatchItsChecksumIsAskedAgainAndNeverKept() async throws {
        try await Self.withVersions { setup in
            // Offset 1 000 100 lies in the bytes inserted at 1 000 000: a block no seed has, so it is fetched.
            try Self.corrupt(setup, at: 1_000_100)
            var request = request(setup, seeds: [setup.old])
            request.maxRetries = 2
            request.retryCap = .milliseconds(300)
            let download = Download(request: request)
            await #expect {
                _ = try await download.run()
            } throws: { error in
                (error as? TransferError)?.code == .retriesExhausted
                    && (error as? TransferError)?.message.contains("did not match the control file's checksums") == true
            }
            #expect(!Fixture.exists(setup.fixture.path("out.img")))
        }
    }

    @Test func whatTheSeedsHoldIsTheControlFilesWordNotTheServersLaterBytes() async throws {
        try await Self.withVersions { setup in
            // The server's first block changes after the control file was made; the seed holds it as the control
            // file describes it. Every block is checked against the control file, so the result is its version
            // (SHA-1 checked), as zsync's is; no byte of the changed block is fetched.
            try Self.corrupt(setup, at: 100)
            let destination = setup.fixture.path("out.img")
            try FileManager.default.copyItem(atPath: setup.old, toPath: destination)
            let (outcome, _) = try await Fixture.runCollecting(Download(request: request(setup, seeds: [])))
            #expect(outcome.result?.sha256 == setup.newSHA)
            #expect(Fixture.sha256(file: destination) == setup.newSHA)
        }
    }

    @Test func theNewVersionKeepsTheOldOnesMode() async throws {
        try await Self.withVersions { setup in
            let destination = setup.fixture.path("out.img")
            try FileManager.default.copyItem(atPath: setup.old, toPath: destination)
            try FileManager.default.setAttributes([.posixPermissions: 0o750], ofItemAtPath: destination)
            let (outcome, _) = try await Fixture.runCollecting(Download(request: request(setup, seeds: [])))
            #expect(outcome.result?.sha256 == setup.newSHA)
            let mode = try FileManager.default.attributesOfItem(atPath: destination)[.posixPermissions] as? Int
            #expect(mode == 0o750)
        }
    }
}
