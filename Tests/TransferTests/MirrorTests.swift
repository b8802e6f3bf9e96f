import Crypto
import Foundation
import RangeServer
import Synchronization
import TestSupport
import Testing

@testable import Transfer

/// Downloads from several sources against three real nginx mirrors of a 12 MiB file.
@Suite(.serialized, .needsNginx)
struct MirrorTests {
    static let size = 12 << 20
    static let pieceLength: Int64 = 1 << 20
    /// The file every mirror serves (made once: it is slow to make in a debug build).
    static let content = DeltaScanTests.bytes(size, seed: 41)

    struct Mirrors {
        var fixture: Fixture
        var servers: [Nginx]
        var content: [UInt8]
        var sha: String
        func url(_ i: Int) -> String { servers[i].url("/f.bin") }
        var urls: [String] { servers.indices.map(url) }
        /// Body bytes each mirror sent for the file (nginx's log).
        func sent(_ i: Int) -> Int64 { MirrorTests.sent(by: servers[i]) }
        var destination: String { fixture.path("out.bin") }
        /// The file's sha-256 as a server announces it (RFC 9530), as nginx directives.
        var digestHeader: String {
            let hash = Data(SHA256.hash(data: content)).base64EncodedString()
            return " add_header Repr-Digest 'sha-256=:\(hash):';"
        }

        /// The set a Metalink file with sha-256 piece hashes would give.
        func set(pieces: Bool = true) -> MirrorSet {
            var hashes: [[UInt8]] = []
            var at = 0
            while at < content.count {
                let end = min(content.count, at + Int(MirrorTests.pieceLength))
                hashes.append(Array(SHA256.hash(data: content[at..<end])))
                at = end
            }
            return MirrorSet(
                sources: urls.map { MirrorSet.Source(url: $0) }, size: Int64(content.count),
                hashes: [.sha256: Array(SHA256.hash(data: content))],
                pieces: pieces ? Metalink.Pieces(kind: .sha256, length: MirrorTests.pieceLength, hashes: hashes) : nil)
        }

        func request(_ set: MirrorSet) -> DownloadRequest {
            var request = DownloadRequest(url: set.sources[0].url, destination: destination)
            request.mirrors = set
            request.computeSHA256 = true
            request.maxRetries = 2
            return request
        }
    }

    /// Body bytes `server` sent for the file (nginx's log).
    static func sent(by server: Nginx) -> Int64 {
        let text = (try? String(contentsOfFile: server.prefix + "/logs/access.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").filter { $0.contains("GET /f.bin ") }.reduce(Int64(0)) { sum, line in
            let fields = line.components(separatedBy: "\" ")
            guard fields.count > 1,
                let bytes = fields[1].split(separator: " ").dropFirst().first.flatMap({ Int64($0) })
            else { return sum }
            return sum + bytes
        }
    }

    /// Three mirrors; `files[i]` replaces mirror i's copy, `locations[i]` goes in its `location /`.
    static func withMirrors(
        files: [Int: [UInt8]] = [:], locations: [Int: String] = [:], _ body: (Mirrors) async throws -> Void
    ) async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let content = Self.content
        var servers: [Nginx] = []
        defer { for s in servers { s.stop() } }
        for i in 0..<3 {
            let root = fixture.path("www\(i)")
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: root + "/f.bin", contents: Data(files[i] ?? content))
            servers.append(try Nginx(root: root, location: locations[i] ?? ""))
        }
        try await body(
            Mirrors(fixture: fixture, servers: servers, content: content, sha: Fixture.sha256(bytes: content)))
    }

    static func sources(_ events: [DownloadEvent]) -> [SourceReport] {
        events.compactMap { event -> [SourceReport]? in
            if case .sources(let list, true) = event { return list }
            return nil
        }.last ?? []
    }

    @Test func everyMirrorServesPartAndNothingIsFetchedTwice() async throws {
        try await Self.withMirrors(locations: [0: "limit_rate 4m;", 1: "limit_rate 4m;", 2: "limit_rate 4m;"]) { m in
            let (outcome, events) = try await Fixture.runCollecting(Download(request: m.request(m.set())))
            let result = try #require(outcome.result)
            #expect(result.sha256 == m.sha)
            #expect(Fixture.sha256(file: m.destination) == m.sha)
            #expect(result.refetchedBytes == 0)
            #expect(result.bytesFetched <= Int64(Self.size) + (256 << 10), "fetched \(result.bytesFetched)")
            let sent = (0..<3).map(m.sent)
            #expect(sent.allSatisfy { $0 > 1 << 20 }, "each mirror served a part: \(sent)")
            let reports = Self.sources(events)
            #expect(reports.count == 3)
            #expect(reports.allSatisfy { $0.dropped == nil && $0.bytes > 0 })
            #expect(reports.reduce(0) { $0 + $1.bytes } == Int64(Self.size))
            #expect(!Fixture.exists(m.destination + ".mirror-part"))
            #expect(!Fixture.exists(m.destination + ".mirror-part.pieces"))
        }
    }

    /// The last bytes are shared by every connection, so the last pieces are often written by both mirrors (here
    /// the file is one piece, so always). A bad mirror then spoils a piece the good one wrote part of: it is
    /// fetched again whole by one, and the download ends with the good mirror's bytes (it failed with "no piece
    /// left it may serve" when every writer of a mixed piece was refused for it).
    @Test func aMixedPieceThatFailsIsFetchedAgainWholeAndTheDownloadEnds() async throws {
        var bad = Self.content
        for i in (Self.size - (3 << 20))..<Self.size { bad[i] ^= 0x5a }
        try await Self.withMirrors(files: [1: bad]) { m in
            for run in 0..<2 {
                var set = m.set()
                set.sources = [MirrorSet.Source(url: m.url(0)), MirrorSet.Source(url: m.url(1))]
                set.pieces = Metalink.Pieces(
                    kind: .sha256, length: Int64(Self.size), hashes: [Array(SHA256.hash(data: m.content))])
                var request = m.request(set)
                request.destination = m.fixture.path("mixed-\(run).bin")
                let (outcome, events) = try await Fixture.runCollecting(Download(request: request))
                #expect(outcome.result?.sha256 == m.sha, "run \(run)")
                #expect(Fixture.sha256(file: request.destination) == m.sha)
                let reports = Self.sources(events)
                #expect(reports.first { $0.url == m.url(0) }?.dropped == nil, "\(reports)")
                // Each source keeps the bytes it wrote that were kept: a failed piece takes off what each wrote.
                #expect(reports.allSatisfy { $0.bytes >= 0 }, "\(reports)")
                #expect(reports.reduce(0) { $0 + $1.bytes } == Int64(Self.size), "\(reports)")
            }
        }
    }

    /// A source whose bytes depend on the range asked (a cache that spoils what it serves from the middle of a
    /// piece) writes part of a piece wrong; the piece, mixed from two sources, fails and is fetched again whole,
    /// which the liar sends right. The bytes each source wrote of the failed copy are compared with the copy that
    /// matched: the liar is dropped, the good source is not (blaming "the other writer" dropped the good one).
    @Test func aMixedPieceThatFailsBlamesTheSourceWhoseBytesDifferFromTheCopyThatMatched() async throws {
        let size: Int64 = 4 << 20
        let content = RangeContent.generated(size: size, seed: 45)
        // The good source is slow, so the liar always ends up taking a span that starts inside the piece.
        let good = try await RangeServer.start(content: content, faults: [.throttle(bytesPerSecond: 1 << 20)])
        let liar = try await RangeServer.start(content: content, faults: [.corruptUnaligned(alignment: size)])
        defer {
            Task {
                try? await good.shutdown()
                try? await liar.shutdown()
            }
        }
        let fixture = Fixture()
        defer { fixture.remove() }
        let digest = Array(SHA256.hash(data: content.allBytes()))
        var request = DownloadRequest(url: good.url(), destination: fixture.path("out.bin"))
        request.mirrors = MirrorSet(
            sources: [MirrorSet.Source(url: good.url()), MirrorSet.Source(url: liar.url())], size: size,
            hashes: [.sha256: digest], pieces: Metalink.Pieces(kind: .sha256, length: size, hashes: [digest]))
        request.computeSHA256 = true
        request.maxRetries = 2
        let (outcome, events) = try await Fixture.runCollecting(Download(request: request))
        #expect(outcome.result?.sha256 == content.sha256Hex())
        #expect(Fixture.sha256(file: fixture.path("out.bin")) == content.sha256Hex())
        let bad = liar.requests.filter { $0.start > 0 && $0.bodyBytes > 0 }
        #expect(!bad.isEmpty, "the liar sent no span from inside the piece: \(liar.requests)")
        #expect(Self.warned(events, "failed its sha-256 check; it came from"), "the piece never failed mixed")
        let reports = Self.sources(events)
        #expect(reports.first { $0.url == good.url() }?.dropped == nil, "\(reports)")
        let why = reports.first { $0.url == liar.url() }?.dropped ?? ""
        #expect(why.contains("differ from the copy that matched"), "\(reports)")
    }

    /// The last source left that sends a piece wrong (a cache on the way spoiled a block, then served it
    /// right) is kept and the piece is fetched from it again: the download ends right and says so. Before, it
    /// was dropped and the download failed ("Every source was dropped"). One that keeps sending wrong is dropped
    /// once it has sent one piece wrong three times, and the download fails saying why.
    @Test(arguments: [1, 1000])
    func theLastSourceLeftIsAskedAgainForAPieceItSentWrong(spoiled times: Int) async throws {
        let size: Int64 = 8 << 20
        let piece: Int64 = 1 << 20
        let content = RangeContent.generated(size: size, seed: 47)
        let region: Range<Int64> = (3 << 20) + 100..<(3 << 20) + 4196
        let server = try await RangeServer.start(content: content, faults: [.corruptRegion(region, times: times)])
        defer { Task { try? await server.shutdown() } }
        let fixture = Fixture()
        defer { fixture.remove() }
        let bytes = content.allBytes()
        let hashes = stride(from: 0, to: Int(size), by: Int(piece)).map {
            Array(SHA256.hash(data: bytes[$0..<$0 + Int(piece)]))
        }
        var request = DownloadRequest(url: server.url(), destination: fixture.path("out.bin"))
        request.mirrors = MirrorSet(
            sources: [MirrorSet.Source(url: server.url())], size: size,
            hashes: [.sha256: Array(SHA256.hash(data: bytes))],
            pieces: Metalink.Pieces(kind: .sha256, length: piece, hashes: hashes))
        let (outcome, events) = await Fixture.runCollectingResult(Download(request: request))
        let spoiledResponses = server.requests.filter {
            $0.bodyBytes > 0 && $0.start < region.upperBound && $0.start + $0.bodyBytes > region.lowerBound
        }
        if times == 1 {
            let result = try #require(try outcome.get().result, "\(outcome)")
            #expect(Fixture.sha256(file: fixture.path("out.bin")) == content.sha256Hex())
            #expect(Self.warned(events, "piece 3 (bytes 3145728-4194303) failed its sha-256 check"), "\(events)")
            #expect(Self.warned(events, "the last source left, and is fetched from it again"), "\(events)")
            #expect(Self.sources(events).allSatisfy { $0.dropped == nil }, "\(Self.sources(events))")
            // The spoiled piece once more, nothing else.
            #expect(result.bytesFetched <= size + piece, "\(result)")
            #expect(spoiledResponses.count == 2, "\(server.requests)")
        } else {
            #expect(throws: TransferError.self, "a file from a source that sends wrong bytes every time") {
                try outcome.get()
            }
            let why = Self.sources(events).first?.dropped ?? ""
            #expect(why.contains("piece 3") && why.contains("sent that piece wrong 3 times"), "\(Self.sources(events))")
            #expect(!FileManager.default.fileExists(atPath: fixture.path("out.bin")))
            // Three copies of the spoiled piece, then no more.
            #expect(spoiledResponses.count == 3, "\(server.requests)")
        }
    }

    /// A kept-alive connection that the server gives up as the next request goes out (its keep-alive timer; a
    /// proxy's, as tinyproxy's) is met by asking again at once on a new connection: no retry is said, no source
    /// fails, and the file is right. Before, each such request counted as a failure and was said as a retry.
    @Test func aKeptAliveConnectionTheServerClosedIsAskedAgainAtOnce() async throws {
        let content = RangeContent.generated(size: 6 << 20, seed: 46)
        // Two each: a request may take one given-up connection from the pool after another.
        let a = try await RangeServer.start(content: content, faults: [.closeKeptAlive(times: 2)])
        let b = try await RangeServer.start(content: content, faults: [.closeKeptAlive(times: 2)])
        defer {
            Task {
                try? await a.shutdown()
                try? await b.shutdown()
            }
        }
        let fixture = Fixture()
        defer { fixture.remove() }
        var request = DownloadRequest(url: a.url(), destination: fixture.path("out.bin"))
        request.mirrors = MirrorSet(sources: [MirrorSet.Source(url: a.url()), MirrorSet.Source(url: b.url())])
        let (outcome, events) = try await Fixture.runCollecting(Download(request: request))
        #expect(outcome.result != nil)
        #expect(Fixture.sha256(file: fixture.path("out.bin")) == content.sha256Hex())
        #expect(a.closedUnanswered + b.closedUnanswered > 0, "no kept-alive connection was reused")
        let retries = events.filter { if case .retrying = $0 { true } else { false } }
        #expect(retries.isEmpty, "\(retries)")
        #expect(Self.sources(events).allSatisfy { $0.dropped == nil }, "\(Self.sources(events))")
    }

    @Test func aCorruptPieceIsFetchedAgainFromAnotherMirrorAndItsSenderDropped() async throws {
        var bad = Self.content
        for i in (5 << 20)..<(6 << 20) { bad[i] ^= 0x5a }
        try await Self.withMirrors(files: [1: bad]) { m in
            let (outcome, events) = try await Fixture.runCollecting(Download(request: m.request(m.set())))
            let result = try #require(outcome.result)
            #expect(Fixture.sha256(file: m.destination) == m.sha)
            let total = (0..<3).map(m.sent).reduce(0, +)
            // Exactly the bad piece again, and what was in flight from the dropped mirror at most.
            #expect(total <= Int64(Self.size) + Self.pieceLength * 3, "sent \(total)")
            #expect(result.bytesFetched <= Int64(Self.size) + Self.pieceLength * 3)
            let reports = Self.sources(events)
            let dropped = reports.filter { $0.dropped != nil }
            // Mirror 1 is dropped only if it was the one asked for the bad piece; then it says which piece.
            if m.sent(1) > 0, let why = dropped.first?.dropped {
                #expect(dropped.count == 1 && dropped[0].url == m.url(1))
                #expect(why.contains("piece 5") && why.contains("sha-256"), "\(why)")
            }
            #expect(reports.filter { $0.dropped == nil }.count >= 2)
        }
    }

    @Test func aDeadMirrorIsDroppedAndTheOthersFinish() async throws {
        try await Self.withMirrors { m in
            var set = m.set(pieces: false)
            let dead = "http://127.0.0.1:\(try Nginx.freePort())/f.bin"
            set.sources.insert(MirrorSet.Source(url: dead), at: 0)
            let (outcome, events) = try await Fixture.runCollecting(Download(request: m.request(set)))
            #expect(outcome.result?.sha256 == m.sha)
            let warnings = events.compactMap { event -> String? in
                if case .warning(let text) = event { return text }
                return nil
            }
            #expect(warnings.contains { $0.contains(dead) }, "\(warnings)")
        }
    }

    /// `judgeSource` (the engine's links and `prefer:`): a refused source gets no request and is listed with
    /// why; a source standing by gets no work while a preferred one serves.
    @Test func aRefusedSourceIsNotAskedAndOneStandingByIsNotUsedWhileAnotherServes() async throws {
        try await Self.withMirrors { m in
            var request = m.request(m.set())
            let (standby, refused) = (m.url(1), m.url(2))
            request.judgeSource = { url in
                url == refused
                    ? .refuse("it is reached over wwan0") : url == standby ? .standby("not on the LAN") : .use
            }
            let (outcome, events) = try await Fixture.runCollecting(Download(request: request))
            #expect(outcome.result?.sha256 == m.sha)
            #expect(m.sent(0) >= Int64(Self.size))
            #expect(m.sent(1) <= 1, "the source standing by served \(m.sent(1)) bytes (its probe: 1)")
            let log = (try? String(contentsOfFile: m.servers[2].prefix + "/logs/access.log", encoding: .utf8)) ?? ""
            #expect(!log.contains("GET /f.bin"), "the refused source was asked: \(log)")
            let reports = Self.sources(events)
            // Set aside, not dropped: it joins when its link is allowed.
            let aside = reports.first { $0.url == refused }
            #expect(aside?.dropped == nil && aside?.standby?.contains("it is reached over wwan0") == true, "\(reports)")
            #expect(reports.first { $0.url == standby }.map { $0.dropped == nil && $0.bytes == 0 } == true)
        }
    }

    @Test func aSourceStandingByTakesOverWhenThePreferredOneIsDropped() async throws {
        let content = RangeContent.generated(size: 12 << 20, seed: 44)
        // 512 KiB/s a connection: about 6 s alone.
        let preferred = try await RangeServer.start(content: content, faults: [.throttle(bytesPerSecond: 512 << 10)])
        let standby = try await RangeServer.start(content: content)
        defer {
            Task {
                try? await preferred.shutdown()
                try? await standby.shutdown()
            }
        }
        let fixture = Fixture()
        defer { fixture.remove() }
        var request = DownloadRequest(url: preferred.url(), destination: fixture.path("out.bin"))
        request.mirrors = MirrorSet(sources: [
            MirrorSet.Source(url: preferred.url()), MirrorSet.Source(url: standby.url()),
        ])
        request.maxRetries = 0
        request.judgeSource = { url in url == preferred.url() ? .use : .standby("not listed") }
        let breaker = Task {
            // The preferred source starts failing every request after a moment: it is dropped.
            try await Task.sleep(for: .milliseconds(1500))
            preferred.setFaults([.reset(after: 0, times: 1_000_000)])
        }
        let (outcome, events) = try await Fixture.runCollecting(Download(request: request))
        _ = try? await breaker.value
        #expect(Fixture.sha256(file: fixture.path("out.bin")) == content.sha256Hex())
        #expect(outcome.result != nil)
        let reports = Self.sources(events)
        #expect(reports.first { $0.url == preferred.url() }?.dropped != nil, "\(reports)")
        let took = reports.first { $0.url == standby.url() }?.bytes ?? 0
        #expect(took > 1 << 20, "the source standing by took over: \(reports)")
        let warnings = events.compactMap { event -> String? in
            if case .warning(let text) = event { return text }
            return nil
        }
        #expect(warnings.contains { $0.contains("stands by (not listed)") }, "\(warnings)")
    }

    /// `no_proxy` per source: a source whose host is in `no_proxy` is fetched directly while the others go
    /// through the proxy (one client per proxy choice, `SourceClients`).
    @Test(.needsProxy, .needsOpenSSL) func eachSourceTakesItsOwnProxyChoice() async throws {
        let proxy = try Tinyproxy()
        defer { proxy.stop() }
        let pki = try TestPKI()
        defer { pki.remove() }
        let content = RangeContent.generated(size: 8 << 20, seed: 45)
        let proxied = try await RangeServer.start(
            content: content, faults: [.throttle(bytesPerSecond: 2 << 20)], tls: try pki.serverTLS())
        let direct = try await RangeServer.start(
            content: content, faults: [.throttle(bytesPerSecond: 2 << 20)], tls: try pki.serverTLS())
        defer {
            Task {
                try? await proxied.shutdown()
                try? await direct.shutdown()
            }
        }
        let fixture = Fixture()
        defer { fixture.remove() }
        let directURL = "https://localhost:\(direct.port)/f"
        var request = DownloadRequest(url: proxied.url(), destination: fixture.path("out.bin"))
        request.mirrors = MirrorSet(sources: [MirrorSet.Source(url: proxied.url()), MirrorSet.Source(url: directURL)])
        request.tls = try TLSSettings.load(caFile: pki.path("ca.crt"))
        request.proxy = try ProxySettings.environment(["https_proxy": proxy.url, "no_proxy": "localhost"])
        let (outcome, events) = try await Fixture.runCollecting(Download(request: request))
        #expect(outcome.result != nil)
        #expect(Fixture.sha256(file: fixture.path("out.bin")) == content.sha256Hex())
        let reports = Self.sources(events)
        #expect(reports.allSatisfy { $0.bytes > 0 && $0.dropped == nil }, "\(reports)")
        // Each source's report names its own choice: `status` and `get --json` no longer say the first URL's.
        #expect(reports.first { $0.url.contains("127.0.0.1") }?.proxy == proxy.url, "\(reports)")
        #expect(reports.first { $0.url.contains("localhost") }.map { $0.proxy == nil } == true, "\(reports)")
        #expect(proxy.connects.contains("127.0.0.1:\(proxied.port)"), "\(proxy.log)")
        #expect(!proxy.connects.contains { $0.hasPrefix("localhost:") }, "the no_proxy source went through the proxy")
        #expect(direct.requestCount >= 2)
    }

    /// No source answering (no connection) is an outage, not the end: they are asked again with back-off,
    /// as a single-source download retries, and a source that comes up is used.
    @Test func sourcesThatDoNotAnswerYetAreAskedAgain() async throws {
        let (a, b) = (try Nginx.freePort(), try Nginx.freePort())
        let content = RangeContent.generated(size: 4 << 20, seed: 46)
        let fixture = Fixture()
        defer { fixture.remove() }
        let urls = ["http://127.0.0.1:\(a)/f", "http://127.0.0.1:\(b)/f"]
        var request = DownloadRequest(url: urls[0], destination: fixture.path("out.bin"))
        request.mirrors = MirrorSet(sources: urls.map { MirrorSet.Source(url: $0) })
        request.maxRetries = 8
        let late = Task { () -> RangeServer in
            try await Task.sleep(for: .milliseconds(800))
            return try await RangeServer.start(port: b, content: content)
        }
        let (outcome, events) = try await Fixture.runCollecting(Download(request: request))
        let server = try await late.value
        defer { Task { try? await server.shutdown() } }
        #expect(outcome.result != nil)
        #expect(Fixture.sha256(file: fixture.path("out.bin")) == content.sha256Hex())
        let retries = events.compactMap { event -> String? in
            if case .retrying(_, _, let reason) = event { return reason }
            return nil
        }
        #expect(retries.first?.contains("no source answered") == true, "\(retries)")
        let reports = Self.sources(events)
        #expect(reports.first { $0.url == urls[0] }?.dropped?.contains("refused") == true, "\(reports)")

        // Without retries, the first round decides.
        request.maxRetries = 0
        request.destination = fixture.path("none.bin")
        request.mirrors = MirrorSet(sources: [MirrorSet.Source(url: urls[0])])
        do throws(TransferError) {
            _ = try await Download(request: request).run()
            Issue.record("a dead source completed")
        } catch {
            #expect(error.code == .noSources, "\(error)")
        }
    }

    /// A download cancelled while it waits for its one URL to be allowed leaves no partial of an earlier run.
    @Test func aCancelWhileWaitingForAnAllowedLinkRemovesThePartial() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        var request = DownloadRequest(url: "http://127.0.0.1:9/f", destination: fixture.path("out.bin"))
        request.judgeSource = { _ in .refuse("it is reached over wwan0") }
        _ = FileManager.default.createFile(atPath: fixture.path("out.bin.part"), contents: Data([1, 2, 3]))
        let download = Download(request: request)
        let watcher = Task { () -> Bool in
            for await event in download.events { if case .retrying = event { return true } }
            return false
        }
        let run = Task { () -> DownloadOutcome? in try? await download.run() }
        #expect(await watcher.value)
        await download.cancel()
        guard case .cancelled? = await run.value else {
            Issue.record("not cancelled")
            return
        }
        #expect(!Fixture.exists(fixture.path("out.bin.part")))
    }

    /// A source refused when the download began joins once its link is allowed: asked again at a link
    /// change (`retryNow`), it takes part of what is left; one still refused never gets a request.
    @Test func aRefusedSourceJoinsWhenItsLinkIsAllowed() async throws {
        try await Self.withMirrors(locations: [0: "limit_rate 512k;"]) { m in
            var request = m.request(m.set())
            let allowed = Mutex(false)
            let (later, never) = (m.url(2), m.url(1))
            request.judgeSource = { url in
                if url == never { return .refuse("it is reached over wwan1") }
                if url == later, !allowed.withLock({ $0 }) { return .refuse("it is reached over wwan0") }
                return .use
            }
            let download = Download(request: request)
            async let finished = Fixture.runCollecting(download)
            try await Task.sleep(for: .milliseconds(1500))
            #expect(m.sent(2) == 0, "the refused source was asked before its link was allowed")
            allowed.withLock { $0 = true }
            download.retryNow()
            let (outcome, events) = try await finished
            #expect(outcome.result?.sha256 == m.sha)
            #expect(Fixture.sha256(file: m.destination) == m.sha)
            #expect(m.sent(2) > 1 << 20, "the source that was allowed took no part: \(m.sent(2))")
            #expect(m.sent(1) == 0, "the source still refused was asked")
            let reports = Self.sources(events)
            let joined = reports.first { $0.url == later }
            #expect(joined.map { $0.bytes > 1 << 20 && $0.dropped == nil && $0.standby == nil } == true, "\(reports)")
            #expect(reports.first { $0.url == never }?.standby?.contains("wwan1") == true, "\(reports)")
            let warnings = events.compactMap { event -> String? in
                if case .warning(let text) = event { return text }
                return nil
            }
            #expect(warnings.contains { $0.contains("Using \(later) now") }, "\(warnings) \(reports)")
        }
    }

    /// A source that becomes refused mid-run (a link change: `retryNow`) stops at once and is set aside, not
    /// dropped; when it is allowed again it joins again.
    @Test func aSourceRefusedMidRunIsSetAsideAndJoinsAgain() async throws {
        try await Self.withMirrors(locations: [0: "limit_rate 256k;", 1: "limit_rate 256k;", 2: "limit_rate 256k;"]) {
            m in
            var request = m.request(m.set())
            let refused = Mutex(false)
            let moving = m.url(2)
            request.judgeSource = { url in
                url == moving && refused.withLock({ $0 }) ? .refuse("it is reached over wwan0") : .use
            }
            let download = Download(request: request)
            async let finished = Fixture.runCollecting(download)
            try await Task.sleep(for: .milliseconds(1000))
            refused.withLock { $0 = true }
            download.retryNow()
            try await Task.sleep(for: .milliseconds(1000))
            refused.withLock { $0 = false }
            download.retryNow()
            let (outcome, events) = try await finished
            #expect(outcome.result?.sha256 == m.sha)
            #expect(Fixture.sha256(file: m.destination) == m.sha)
            let warnings = events.compactMap { event -> String? in
                if case .warning(let text) = event { return text }
                return nil
            }
            let aside = warnings.firstIndex { $0.contains("Not using \(moving) now: it is reached over wwan0") }
            let back = warnings.firstIndex { $0.contains("Using \(moving) now") }
            #expect(aside != nil && back != nil && aside! < back!, "\(warnings)")
            #expect(!warnings.contains { $0.contains("Dropping the source \(moving)") }, "\(warnings)")
            let report = Self.sources(events).first { $0.url == moving }
            #expect(
                report.map { $0.dropped == nil && $0.standby == nil && $0.bytes > 0 } == true,
                "\(String(describing: report))")
        }
    }

    @Test func everySourceRefusedWaitsForALinkChange() async throws {
        try await Self.withMirrors { m in
            var request = m.request(m.set())
            let allowed = Mutex(false)
            request.judgeSource = { url in allowed.withLock { $0 } ? .use : .refuse("it is reached over wwan0") }
            let download = Download(request: request)
            let watcher = Task { () -> String? in
                for await event in download.events {
                    if case .retrying(_, _, let reason) = event { return reason }
                }
                return nil
            }
            let run = Task { () -> DownloadOutcome? in try? await download.run() }
            let waited = await watcher.value
            #expect(waited?.contains("no source may be used") == true, "\(waited ?? "")")
            #expect(waited?.contains("reached over wwan0") == true)
            #expect(!Fixture.exists(m.destination + ".mirror-part"))
            #expect(m.sent(0) == 0 && m.sent(1) == 0 && m.sent(2) == 0)
            allowed.withLock { $0 = true }
            download.retryNow()
            let outcome = await run.value
            #expect(outcome?.result?.sha256 == m.sha)
        }
    }

    @Test func aMirrorWithAnotherLengthIsNotUsed() async throws {
        let other = Array(Self.content.dropLast(4096))
        try await Self.withMirrors(files: [2: other]) { m in
            var set = m.set(pieces: false)
            set.size = nil
            set.hashes = [:]
            let (outcome, events) = try await Fixture.runCollecting(Download(request: m.request(set)))
            #expect(outcome.result?.sha256 == m.sha)
            #expect(m.sent(2) <= 1, "only the first byte was asked of mirror 2: \(m.sent(2))")
            let warnings = events.compactMap { event -> String? in
                if case .warning(let text) = event { return text }
                return nil
            }
            #expect(warnings.contains { $0.contains(m.url(2)) && $0.contains("bytes where the other sources have") })
        }
    }

    @Test func aSlowMirrorLosesItsSpanToTheFastOnes() async throws {
        try await Self.withMirrors(locations: [0: "limit_rate 100k;"]) { m in
            let (outcome, _) = try await Fixture.runCollecting(Download(request: m.request(m.set())))
            let result = try #require(outcome.result)
            #expect(result.sha256 == m.sha)
            // At 100 KiB/s mirror 0 could not have sent much before its span was taken.
            #expect(m.sent(0) < 2 << 20, "the slow mirror sent \(m.sent(0))")
            #expect(result.bytesFetched <= Int64(Self.size) + (1 << 20))
        }
    }

    /// Mirrors slow enough for a pause to find pieces in progress: nginx lets each request send a second's
    /// worth at once, so a faster limit is done with a 1 MiB piece before the pause.
    static let slow = [0: "limit_rate 256k;", 1: "limit_rate 256k;", 2: "limit_rate 256k;"]

    /// Every byte written before a pause is kept, those of pieces left part way included: the resumed run
    /// fetches exactly the rest (before, each connection's piece in progress was fetched again, about 3 MiB).
    @Test(arguments: [true, false])
    func aPausedDownloadResumesFromEveryByteItWrote(pieceHashes: Bool) async throws {
        try await Self.withMirrors(locations: Self.slow) { m in
            let request = m.request(m.set(pieces: pieceHashes))
            let (first, events) = try await Fixture.runPausing(Download(request: request), at: 3 << 20)
            #expect(first == .paused)
            #expect(Fixture.exists(m.destination + ".mirror-part.pieces"))
            let paused = try #require(
                events.compactMap { event -> DownloadProgress? in
                    if case .paused(let p) = event { return p } else { return nil }
                }.last)
            let record = try #require(
                PieceRecord.decode(
                    Array(try Data(contentsOf: URL(fileURLWithPath: m.destination + ".mirror-part.pieces")))))
            #expect(!record.written.isEmpty, "no piece was left part way")
            let (second, _) = try await Fixture.runCollecting(Download(request: request))
            let result = try #require(second.result)
            #expect(result.sha256 == m.sha)
            #expect(result.resumedBytes == paused.bytesDone)
            #expect(result.bytesFetched - result.discardedBytes == Int64(Self.size) - paused.bytesDone)
            #expect(result.refetchedBytes == 0)
        }
    }

    /// The record keeps each source without credentials or query; one written before 2026-11-27 kept them whole.
    /// Either way a resume with the URLs signed again (another query) finds the earlier run's sources and keeps
    /// the partial, where the whole old keys matched no URL signed again and it started over.
    @Test func aRecordFindsItsSourcesWhenTheirURLsAreSignedAgain() async throws {
        try await Self.withMirrors(locations: Self.slow) { m in
            var set = m.set(pieces: false)
            set.sources = m.urls.map { MirrorSet.Source(url: "http://u:hunter2@" + $0.dropFirst(7) + "?sig=one") }
            var request = m.request(set)
            let (first, _) = try await Fixture.runPausing(Download(request: request), at: 3 << 20)
            #expect(first == .paused)
            let recordPath = m.destination + ".mirror-part.pieces"
            var record = try #require(PieceRecord.decode(Array(try Data(contentsOf: URL(fileURLWithPath: recordPath)))))
            #expect(!record.sources.isEmpty)
            #expect(record.sources.keys.allSatisfy { !$0.contains("hunter2") && !$0.contains("sig=one") })
            // As the record was written before.
            record.sources = Dictionary(
                uniqueKeysWithValues: record.sources.map {
                    (
                        $0.key.replacingOccurrences(of: "<redacted>@", with: "u:hunter2@")
                            .replacingOccurrences(of: "?<redacted>", with: "?sig=one"), $0.value
                    )
                })
            try Data(record.encoded()).write(to: URL(fileURLWithPath: recordPath))
            set.sources = set.sources.map { MirrorSet.Source(url: $0.url.replacingOccurrences(of: "one", with: "two")) }
            request = m.request(set)
            let (second, events) = try await Fixture.runCollecting(Download(request: request))
            let result = try #require(second.result)
            #expect(result.sha256 == m.sha)
            #expect(result.resumedBytes >= 2 << 20, "\(result)")
            #expect(!Self.warned(events, "starting over"), "\(events)")
        }
    }

    /// Bytes of a piece left part way that match their record but not the piece's hash (an earlier run wrote
    /// what a lying mirror sent): the piece is fetched again, and the source that finished it is not blamed.
    @Test func aPieceLeftPartWayThatFailsItsHashBlamesNoSource() async throws {
        try await Self.withMirrors(locations: Self.slow) { m in
            let request = m.request(m.set())
            let (first, _) = try await Fixture.runPausing(Download(request: request), at: 3 << 20)
            #expect(first == .paused)
            let recordPath = m.destination + ".mirror-part.pieces"
            var record = try #require(PieceRecord.decode(Array(try Data(contentsOf: URL(fileURLWithPath: recordPath)))))
            let span = try #require(record.written.first).range
            let handle = try #require(FileHandle(forUpdatingAtPath: m.destination + ".mirror-part"))
            try handle.seek(toOffset: UInt64(span.lowerBound))
            let damaged = [UInt8](repeating: 0x5a, count: min(16, span.count))
            try handle.write(contentsOf: Data(damaged))
            try handle.seek(toOffset: UInt64(span.lowerBound))
            let now = try #require(try handle.read(upToCount: span.count))
            try handle.close()
            var crc = CRC32C()
            now.withUnsafeBytes { crc.update($0) }
            record.written[0].crc = crc.value
            try Data(record.encoded()).write(to: URL(fileURLWithPath: recordPath))
            let (second, events) = try await Fixture.runCollecting(Download(request: request))
            let result = try #require(second.result)
            #expect(result.sha256 == m.sha)
            #expect(Self.sources(events).allSatisfy { $0.dropped == nil }, "\(Self.sources(events))")
            #expect(Self.warned(events, "the partial file of an earlier run"))
            // What the earlier run held of that piece is fetched again: no longer counted as resumed, and not as
            // received twice in this run (docs/get.md's sums hold).
            #expect(result.refetchedBytes == 0, "\(result)")
            #expect(result.resumedBytes < Int64(Self.size) && result.resumedBytes > 0)
            #expect(result.bytesFetched == Int64(Self.size) - result.resumedBytes + result.discardedBytes, "\(result)")
            let reports = Self.sources(events)
            #expect(reports.allSatisfy { $0.bytes >= 0 }, "\(reports)")
            #expect(reports.reduce(0) { $0 + $1.bytes } == Int64(Self.size) - result.resumedBytes, "\(reports)")
        }
    }

    /// A record that is damaged, or one for another download, is not used, and the run says why it starts over.
    @Test func aPartialWithoutAUsableRecordStartsOverAndSaysWhy() async throws {
        try await Self.withMirrors(locations: Self.slow) { m in
            let request = m.request(m.set())
            let (first, _) = try await Fixture.runPausing(Download(request: request), at: 2 << 20)
            #expect(first == .paused)
            try Data("meterwise-pieces 1\ntotal 12\n".utf8).write(
                to: URL(fileURLWithPath: m.destination + ".mirror-part.pieces"))
            var faster = request
            faster.mirrors?.pieces = nil
            let (second, events) = try await Fixture.runCollecting(Download(request: faster))
            #expect(second.result?.sha256 == m.sha)
            #expect(second.result?.resumedBytes == 0)
            #expect(Self.warned(events, "is damaged, cut short"), "\(events.prefix(3))")
        }
    }

    /// One output has one writer, whatever its kind: a download from several sources does not start while a
    /// single-source one writes the same file, nor the other way round, and the refused one leaves nothing.
    @Test func oneOutputHasOneWriterWhateverItsKind() async throws {
        try await Self.withMirrors(locations: Self.slow) { m in
            let single = { Download(request: DownloadRequest(url: m.url(0), destination: m.destination)) }
            let several = { Download(request: m.request(m.set())) }
            for (first, second, left) in [
                (single(), several(), ".mirror-part"), (several(), single(), ".part"),
            ] {
                async let outcome = first.run()
                for await event in first.events {
                    if case .progress(let p) = event, p.bytesDone > 0 { break }
                }
                do throws(TransferError) {
                    _ = try await second.run()
                    Issue.record("a second download of the same output ran")
                } catch {
                    #expect(error.code == .outputBusy, "\(error.message)")
                    #expect(error.message.contains("Another download of"), "\(error.message)")
                }
                #expect(!Fixture.exists(m.destination + left), "the refused download left \(left)")
                await first.cancel()
                _ = try? await outcome
            }
        }
    }

    @Test func aDamagedVerifiedPieceIsFetchedAgainOnResume() async throws {
        try await Self.withMirrors(locations: Self.slow) { m in
            let request = m.request(m.set())
            let (first, _) = try await Fixture.runPausing(Download(request: request), at: 3 << 20)
            #expect(first == .paused)
            // Damage the first piece of the partial file: the record says it is verified; the check says not.
            let handle = try #require(FileHandle(forUpdatingAtPath: m.destination + ".mirror-part"))
            try handle.seek(toOffset: 10)
            try handle.write(contentsOf: Data([0, 1, 2, 3]))
            try handle.close()
            let (second, events) = try await Fixture.runCollecting(Download(request: request))
            #expect(second.result?.sha256 == m.sha)
            #expect(
                events.contains {
                    if case .warning(let w) = $0 { return w.contains("failed their check") } else { return false }
                })
        }
    }

    @Test func wrongWholeFileDigestFailsWithoutRenaming() async throws {
        try await Self.withMirrors { m in
            var set = m.set(pieces: false)
            set.hashes = [.sha256: Array(repeating: 7, count: 32)]
            do {
                _ = try await Fixture.runCollecting(Download(request: m.request(set)))
                Issue.record("a wrong digest completed")
            } catch let error as TransferError {
                #expect(error.code == .checksumMismatch)
            }
            #expect(!Fixture.exists(m.destination))
        }
    }

    @Test func linkDuplicatesAddSourcesAndDigestHeadersCheckTheFile() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let content = Self.content
        for name in ["a", "b"] {
            try FileManager.default.createDirectory(atPath: fixture.path(name), withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: fixture.path(name) + "/f.bin", contents: Data(content))
        }
        let b = try Nginx(root: fixture.path("b"))
        defer { b.stop() }
        let right = Data(SHA256.hash(data: content)).base64EncodedString()
        let wrong = Data(repeating: 9, count: 32).base64EncodedString()
        for (digest, good) in [(right, true), (wrong, false)] {
            // Only mirror a is given; it names b as a duplicate and gives the file's digest.
            let a = try Nginx(
                root: fixture.path("a"),
                location:
                    "add_header Link '<\(b.url("/f.bin"))>; rel=duplicate; pri=2'; add_header Repr-Digest 'sha-256=:\(digest):';"
            )
            defer { a.stop() }
            var request = DownloadRequest(url: a.url("/f.bin"), destination: fixture.path("out-\(good).bin"))
            request.mirrors = MirrorSet(sources: [MirrorSet.Source(url: a.url("/f.bin"))])
            request.computeSHA256 = true
            do {
                let (outcome, events) = try await Fixture.runCollecting(Download(request: request))
                #expect(good, "a wrong digest header completed")
                #expect(outcome.result?.sha256 == Fixture.sha256(bytes: content))
                #expect(Self.sources(events).map(\.url).contains(b.url("/f.bin")))
            } catch let error as TransferError {
                #expect(!good, "\(error)")
                #expect(error.code == .checksumMismatch)
            }
        }
        let log = (try? String(contentsOfFile: b.prefix + "/logs/access.log", encoding: .utf8)) ?? ""
        #expect(log.contains("GET /f.bin "), "the duplicate was asked")
    }

    static func warned(_ events: [DownloadEvent], _ text: String) -> Bool {
        events.contains { if case .warning(let w) = $0 { w.contains(text) } else { false } }
    }

    /// `--sha256` that contradicts the digest the sources give: a server's mirrors are not used (the URL's bytes
    /// alone are checked, once), and a Metalink file's digest fails before any byte of the file.
    @Test func aDigestThatContradictsTheExpectedSHA256IsSaidBeforeTheFileMovesTwice() async throws {
        try await Self.withMirrors { m in
            let links = [m.url(1), m.url(2)].map { "add_header Link '<\($0)>; rel=duplicate';" }.joined()
            let origin = try Nginx(root: m.servers[0].root, location: links + m.digestHeader)
            defer { origin.stop() }
            let wrong = String(repeating: "ab", count: 32)
            var request = DownloadRequest(url: origin.url("/f.bin"), destination: m.destination)
            request.expectedSHA256 = wrong
            let download = Download(request: request)
            async let collected = Fixture.collect(download.events)
            do throws(TransferError) {
                _ = try await download.run()
                Issue.record("a download against a wrong --sha256 completed")
            } catch {
                #expect(error.code == .checksumMismatch)
            }
            let events = await collected
            #expect(Self.warned(events, "not using the 2 other source(s) it names"), "\(events)")
            #expect(m.sent(1) == 0 && m.sent(2) == 0, "the mirrors were asked")
            #expect(Self.sent(by: origin) <= Int64(Self.size) + (64 << 10), "\(Self.sent(by: origin))")
            // A Metalink file's digest against --sha256: refused before the file is fetched.
            var several = m.request(m.set())
            several.expectedSHA256 = wrong
            several.destination = m.fixture.path("several.bin")
            let before = (0...2).map { m.sent($0) }
            do throws(TransferError) {
                _ = try await Download(request: several).run()
                Issue.record("a download whose Metalink digest contradicts --sha256 ran")
            } catch {
                #expect(error.code == .checksumMismatch)
                #expect(error.message.contains("nothing was downloaded"), "\(error.message)")
            }
            #expect(zip((0...2).map { m.sent($0) }, before).allSatisfy { $0 - $1 < 4096 }, "the file was fetched")
            #expect(!Fixture.exists(m.fixture.path("several.bin.mirror-part")))
        }
    }

    @Test func aSingleURLWhoseServerNamesDuplicatesIsFetchedFromThemAll() async throws {
        try await Self.withMirrors(locations: [1: "limit_rate 3m;", 2: "limit_rate 3m;"]) { m in
            // Given one URL, no --mirror: its server names mirrors 1 and 2 (RFC 6249), and one more that is itself.
            let links = [m.url(1), m.url(2)].enumerated().map {
                "add_header Link '<\($1)>; rel=duplicate; pri=\($0 + 1)';"
            }
            let origin = try Nginx(
                root: m.servers[0].root,
                location: "limit_rate 3m; add_header Link '</f.bin>; rel=duplicate';" + links.joined() + m.digestHeader)
            defer { origin.stop() }
            var request = DownloadRequest(url: origin.url("/f.bin"), destination: m.destination)
            request.computeSHA256 = true
            let (outcome, events) = try await Fixture.runCollecting(Download(request: request))
            #expect(outcome.result?.sha256 == m.sha)
            #expect(Fixture.sha256(file: m.destination) == m.sha)
            #expect(Self.warned(events, "names 2 other sources"), "\(events)")
            let reports = Self.sources(events)
            #expect(Set(reports.map(\.url)) == [origin.url("/f.bin"), m.url(1), m.url(2)])
            #expect(reports.allSatisfy { $0.dropped == nil && $0.bytes > 1 << 20 }, "\(reports)")
            #expect(reports.reduce(0) { $0 + $1.bytes } == Int64(Self.size))
            #expect(!Fixture.exists(m.destination + ".part"))
            // Asked not to follow (`--no-follow-metalink`), the URL given is the only source.
            request.followMetalink = false
            request.destination = m.fixture.path("alone.bin")
            let before = (1...2).map { m.sent($0) }
            let (alone, quiet) = try await Fixture.runCollecting(Download(request: request))
            #expect(alone.result?.sha256 == m.sha)
            #expect(!Self.warned(quiet, "other source"))
            #expect((1...2).map { m.sent($0) } == before, "the mirrors were not asked")
        }
    }

    @Test func aSingleURLTurnedIntoSeveralResumesWithoutLosingASpan() async throws {
        try await Self.withMirrors(locations: [1: "limit_rate 256k;", 2: "limit_rate 256k;"]) { m in
            let links = [m.url(1), m.url(2)].map { "add_header Link '<\($0)>; rel=duplicate';" }.joined()
            let origin = try Nginx(root: m.servers[0].root, location: "limit_rate 256k;" + links + m.digestHeader)
            defer { origin.stop() }
            var request = DownloadRequest(url: origin.url("/f.bin"), destination: m.destination)
            request.computeSHA256 = true
            let (first, _) = try await Fixture.runPausing(Download(request: request), at: 3 << 20)
            #expect(first == .paused)
            let before = Self.sent(by: origin) + m.sent(1) + m.sent(2)
            let (second, events) = try await Fixture.runCollecting(Download(request: request))
            #expect(second.result?.sha256 == m.sha)
            #expect(Self.warned(events, "names 2 other sources"))
            let resumed = second.result?.resumedBytes ?? 0
            #expect(resumed >= 1 << 20, "\(String(describing: second.result))")
            // The resumed run's first answer asked for one byte, not a span that the switch throws away.
            let after = Self.sent(by: origin) + m.sent(1) + m.sent(2)
            let left = Int64(Self.size) - resumed
            #expect(after - before <= left + (64 << 10), "sent \(after - before) for \(left) left")
        }
    }

    @Test func linksWithoutTheFilesDigestAreIgnored() async throws {
        try await Self.withMirrors { m in
            // RFC 6249: without the file's digest nothing could tell a stale mirror, so the links do not count.
            let links = [m.url(1), m.url(2)].map { "add_header Link '<\($0)>; rel=duplicate';" }.joined()
            let origin = try Nginx(root: m.servers[0].root, location: links)
            defer { origin.stop() }
            var request = DownloadRequest(url: origin.url("/f.bin"), destination: m.destination)
            request.computeSHA256 = true
            let (outcome, events) = try await Fixture.runCollecting(Download(request: request))
            #expect(outcome.result?.sha256 == m.sha)
            #expect(!Self.warned(events, "other source"))
            #expect(m.sent(1) == 0 && m.sent(2) == 0, "a mirror was asked: \(m.sent(1)) / \(m.sent(2))")
        }
    }

    @Test func aStaleMirrorOfTheSameLengthEndsInTheRightFileFromTheURLGiven() async throws {
        var stale = Self.content
        for i in stride(from: 0, to: stale.count, by: 4096) { stale[i] ^= 0x33 }
        try await Self.withMirrors(files: [1: stale], locations: [0: "limit_rate 2m;", 1: "limit_rate 2m;"]) { m in
            // The origin names mirror 1, which has another file of the same length and says no digest of its own.
            let origin = try Nginx(
                root: m.servers[0].root,
                location: "limit_rate 2m; add_header Link '<\(m.url(1))>; rel=duplicate';" + m.digestHeader)
            defer { origin.stop() }
            var request = DownloadRequest(url: origin.url("/f.bin"), destination: m.destination)
            request.computeSHA256 = true
            let (outcome, events) = try await Fixture.runCollecting(Download(request: request))
            #expect(outcome.result?.sha256 == m.sha, "\(outcome)")
            #expect(Fixture.sha256(file: m.destination) == m.sha)
            #expect(Self.warned(events, "alone"), "\(events)")
            #expect(!Fixture.exists(m.destination + ".mirror-part"))
        }
    }

    @Test func aResumedPartialNeverTakesMirrorsNamedWithoutADigest() async throws {
        var stale = Self.content
        for i in stride(from: 0, to: stale.count, by: 4096) { stale[i] ^= 0x33 }
        try await Self.withMirrors(files: [1: stale], locations: [2: "limit_rate 256k;"]) { m in
            let root = m.servers[0].root
            // `/res/` names the good mirror 2 with the file's digest; `/nodig/` names the stale mirror 1 without one.
            let origin = try Nginx(
                root: root,
                location: """
                    location /res/ { alias \(root)/; limit_rate 256k; add_header Link '<\(m.url(2))>; rel=duplicate'; \
                    \(m.digestHeader) }
                    location /nodig/ { alias \(root)/; add_header Link '<\(m.url(1))>; rel=duplicate'; }
                    """)
            defer { origin.stop() }
            var request = DownloadRequest(url: origin.url("/res/f.bin"), destination: m.destination)
            request.computeSHA256 = true
            let (first, _) = try await Fixture.runPausing(Download(request: request), at: 3 << 20)
            #expect(first == .paused)
            #expect(Fixture.exists(m.destination + ".mirror-part.pieces"))
            // Another URL of the same name, whose server names the stale mirror and no digest.
            request.url = origin.url("/nodig/f.bin")
            let (outcome, _) = try await Fixture.runCollecting(Download(request: request))
            #expect(outcome.result?.sha256 == m.sha, "\(outcome)")
            #expect(m.sent(1) == 0, "the mirror named without a digest sent \(m.sent(1)) bytes")
            #expect(!Fixture.exists(m.destination + ".mirror-part"))
        }
    }

    @Test func aRedirectorsLinkHeadersAddSources() async throws {
        try await Self.withMirrors(locations: [0: "limit_rate 3m;", 1: "limit_rate 3m;", 2: "limit_rate 3m;"]) { m in
            // A mirror system's redirector (MirrorBrain): a 302 to mirror 0 that names mirrors 0, 1 and 2 on the
            // 302 itself; it serves nothing of the file.
            let links = m.urls.map { "add_header Link '<\($0)>; rel=duplicate';" }.joined()
            let redirector = try Nginx(
                root: m.fixture.path("www0"),
                location: "location = /f.bin { \(links) \(m.digestHeader) return 302 \(m.url(0)); }")
            defer { redirector.stop() }
            var request = DownloadRequest(url: redirector.url("/f.bin"), destination: m.destination)
            request.computeSHA256 = true
            let (outcome, events) = try await Fixture.runCollecting(Download(request: request))
            #expect(outcome.result?.sha256 == m.sha)
            #expect(Self.warned(events, "names 2 other sources"), "\(events)")
            // The redirector's URL leads to mirror 0; 1 and 2 join; none is asked twice for the same bytes.
            let sent = (0..<3).map(m.sent)
            #expect(sent.allSatisfy { $0 > 1 << 20 }, "each mirror served a part: \(sent)")
            // Beyond the file: what the first answer carried before its head was read (its ask is bounded to 2 MiB).
            #expect(sent.reduce(0, +) <= Int64(Self.size) + (2 << 20) + (64 << 10), "\(sent)")
            #expect(Set(Self.sources(events).map(\.url)) == [redirector.url("/f.bin"), m.url(1), m.url(2)])
        }
    }

    @Test func aResumeAfterTheFileChangedOnTheMirrorsStartsOverWithoutPieceHashes() async throws {
        try await Self.withMirrors(locations: Self.slow) { m in
            var set = m.set(pieces: false)
            set.hashes = [:]
            set.size = nil
            let request = m.request(set)
            let (first, _) = try await Fixture.runPausing(Download(request: request), at: 3 << 20)
            #expect(first == .paused)
            // The file changes on every mirror (same length, new bytes, new ETag).
            var changed = Self.content
            for i in stride(from: 0, to: changed.count, by: 4096) { changed[i] ^= 0x77 }
            // nginx's ETag and Last-Modified have a one-second grain: the new version is dated a minute later, as
            // a version published later would be.
            for server in m.servers {
                let path = server.root + "/f.bin"
                _ = FileManager.default.createFile(atPath: path, contents: Data(changed))
                try FileManager.default.setAttributes(
                    [.modificationDate: Date().addingTimeInterval(60)], ofItemAtPath: path)
            }
            let (second, events) = try await Fixture.runCollecting(Download(request: request))
            #expect(second.result?.resumedBytes == 0)
            #expect(Fixture.sha256(file: m.destination) == Fixture.sha256(bytes: changed))
            #expect(
                events.contains {
                    if case .warning(let w) = $0 { return w.contains("another version") } else { return false }
                })
        }
    }

    @Test func anIdleFastMirrorTakesTheSpanOfAVerySlowOne() async throws {
        // Mirror 0 at 2 KiB/s: its first 1 MiB piece would take over eight minutes; the others are local and fast.
        try await Self.withMirrors(locations: [0: "limit_rate 2k;"]) { m in
            var set = m.set()
            set.sources = [MirrorSet.Source(url: m.url(0)), MirrorSet.Source(url: m.url(1))]
            let (outcome, _) = try await Fixture.runCollecting(Download(request: m.request(set)))
            #expect(outcome.result?.sha256 == m.sha)
            #expect(m.sent(0) < 256 << 10, "the slow mirror sent \(m.sent(0))")
        }
    }

    @Test func theDigestMostSourcesGiveWinsOverALiar() async throws {
        let right = Data(SHA256.hash(data: Self.content)).base64EncodedString()
        let wrong = Data(repeating: 3, count: 32).base64EncodedString()
        let header = { (d: String) in "add_header Repr-Digest 'sha-256=:\(d):';" }
        try await Self.withMirrors(locations: [0: header(wrong), 1: header(right), 2: header(right)]) { m in
            var set = m.set(pieces: false)
            set.hashes = [:]
            let (outcome, events) = try await Fixture.runCollecting(Download(request: m.request(set)))
            #expect(outcome.result?.sha256 == m.sha)
            let warnings = events.compactMap { event -> String? in
                if case .warning(let text) = event { return text }
                return nil
            }
            #expect(warnings.contains { $0.contains(m.url(0)) && $0.contains("digest header") }, "\(warnings)")
        }
    }

    @Test func theFirstSourcesThatAnswerAreUsedWhenManyAreDead() async throws {
        try await Self.withMirrors { m in
            var set = m.set(pieces: false)
            var dead: [MirrorSet.Source] = []
            for _ in 0..<MirrorSet.maxSources {
                dead.append(MirrorSet.Source(url: "http://127.0.0.1:\(try Nginx.freePort())/f.bin"))
            }
            set.sources = dead + [MirrorSet.Source(url: m.url(1))]
            let (outcome, _) = try await Fixture.runCollecting(Download(request: m.request(set)))
            #expect(outcome.result?.sha256 == m.sha)
        }
    }

    @Test func aFileLargerThanTheFreeSpaceIsRefusedBeforeAnyByte() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let huge = RangeContent.generated(size: 1 << 50, seed: 5)
        let a = try await RangeServer.start(content: huge)
        let b = try await RangeServer.start(content: huge)
        var request = DownloadRequest(url: a.url("/x"), destination: fixture.path("x"))
        request.mirrors = MirrorSet(sources: [MirrorSet.Source(url: a.url("/x")), MirrorSet.Source(url: b.url("/x"))])
        do {
            _ = try await Fixture.runCollecting(Download(request: request))
            Issue.record("a 1 PiB file was taken")
        } catch let error as TransferError {
            #expect(error.code == .tooLarge, "\(error)")
        }
        try await a.shutdown()
        try await b.shutdown()
        #expect(!Fixture.exists(fixture.path("x.mirror-part")))
    }

    @Test func aServerThatAnswersWithAMetalinkFileIsFollowed() async throws {
        try await Self.withMirrors(locations: [0: "types { application/metalink4+xml meta4; }"]) { m in
            let hex = { (d: [UInt8]) in d.map { String(format: "%02x", $0) }.joined() }
            let meta4 = """
                <?xml version="1.0" encoding="UTF-8"?>
                <metalink xmlns="urn:ietf:params:xml:ns:metalink"><file name="f.bin"><size>\(Self.size)</size>
                <hash type="sha-256">\(hex(Array(SHA256.hash(data: Self.content))))</hash>
                <url priority="1">\(m.url(1))</url><url priority="2">\(m.url(2))</url></file></metalink>
                """
            _ = FileManager.default.createFile(atPath: m.servers[0].root + "/f.meta4", contents: Data(meta4.utf8))
            var request = DownloadRequest(url: m.servers[0].url("/f.meta4"), destination: m.destination)
            request.computeSHA256 = true
            let (outcome, events) = try await Fixture.runCollecting(Download(request: request))
            #expect(outcome.result?.sha256 == m.sha)
            #expect(Self.sources(events).map(\.url).sorted() == [m.url(1), m.url(2)].sorted())
            #expect(!Fixture.exists(m.destination + ".part"))
            // Asked not to follow, the Metalink file itself is saved.
            request.followMetalink = false
            request.destination = m.fixture.path("saved.meta4")
            let (saved, _) = try await Fixture.runCollecting(Download(request: request))
            #expect(saved.result?.totalBytes == Int64(meta4.utf8.count))
            // Named only from the URL (`get` without -o), the file takes the Metalink file's name beside it.
            request.followMetalink = true
            request.nameFromMetalink = true
            request.destination = m.fixture.path("f.meta4")
            let (named, _) = try await Fixture.runCollecting(Download(request: request))
            #expect(named.result?.path == m.fixture.path("f.bin"))
            #expect(Fixture.sha256(file: m.fixture.path("f.bin")) == m.sha)
            #expect(!Fixture.exists(m.fixture.path("f.meta4")))
        }
    }
}
