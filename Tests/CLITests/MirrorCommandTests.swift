import Crypto
import Foundation
import RangeServer
import TestSupport
import Testing

/// `meterwise get` with several sources and Metalink files, as docs/mirrors.md describes it.
@Suite(.needsBinary) struct MirrorCommandTests {
    static func events(_ stdout: String) -> [[String: Any]] {
        stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    static func sha256(file: String) -> String? {
        guard let data = FileManager.default.contents(atPath: file) else { return nil }
        return hex(SHA256.hash(data: data))
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// A Metalink v4 file for `content` at `urls`, with 256 KiB sha-256 pieces.
    static func meta4(_ content: [UInt8], urls: [String], name: String = "f.bin") -> String {
        var pieces = ""
        var at = 0
        while at < content.count {
            let end = min(content.count, at + (256 << 10))
            pieces += "<hash>\(hex(SHA256.hash(data: content[at..<end])))</hash>\n"
            at = end
        }
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <metalink xmlns="urn:ietf:params:xml:ns:metalink">
              <file name="\(name)">
                <size>\(content.count)</size>
                <hash type="sha-256">\(hex(SHA256.hash(data: content)))</hash>
                <pieces length="262144" type="sha-256">
            \(pieces)    </pieces>
            \(urls.enumerated().map { "    <url priority=\"\($0.offset + 1)\">\($0.element)</url>" }.joined(separator: "\n"))
              </file>
            </metalink>
            """
    }

    @Test func severalURLsAreMirrorsAndEachIsReported() async throws {
        let base = try GetCommandTests.directory("mirrors")
        defer { try? FileManager.default.removeItem(at: base) }
        let content = RangeContent.generated(size: 6 << 20, seed: 91)
        let a = try await RangeServer.start(content: content)
        let b = try await RangeServer.start(content: content)
        let output = base.appendingPathComponent("out.bin").path
        let run = try BinaryRun.run(["get", a.url("/f.bin"), "--mirror", b.url("/f.bin"), "-o", output, "--json"])
        try await a.shutdown()
        try await b.shutdown()
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(Self.sha256(file: output) == content.sha256Hex())
        let sources =
            Self.events(run.stdout).last { $0["event"] as? String == "sources" }?["sources"] as? [[String: Any]]
        #expect(sources?.count == 2, "\(run.stdout)")
        #expect(sources?.allSatisfy { ($0["bytes"] as? Int ?? 0) > 0 && $0["dropped"] is NSNull } == true)
    }

    /// Sources that `no_proxy` sends different ways: the first line says so rather than naming the first URL's
    /// proxy, and each source's line (and `--json`'s sources) names its own.
    @Test(.needsProxy) func eachSourceNamesTheProxyItWentThrough() async throws {
        let base = try GetCommandTests.directory("mirror-proxies")
        defer { try? FileManager.default.removeItem(at: base) }
        let proxy = try Tinyproxy()
        defer { proxy.stop() }
        let two = try await ProxiedAndDirect(seed: 93)
        let (proxied, direct) = (two.proxied, two.direct)
        let json = try two.get(proxy: proxy.url, output: base.appendingPathComponent("json.bin").path, ["--json"])
        let text = try two.get(proxy: proxy.url, output: base.appendingPathComponent("text.bin").path)
        try await two.shutdown()
        #expect(json.status == 0 && text.status == 0, "\(json.stdout)\(json.stderr)\(text.stderr)")
        let events = Self.events(json.stdout)
        #expect(events.first { $0["event"] as? String == "started" }?["proxies_differ"] as? Bool == true)
        let sources =
            events.last { $0["event"] as? String == "sources" }?["sources"] as? [[String: Any]] ?? []
        #expect(sources.first { ($0["url"] as? String) == proxied }?["proxy"] as? String == proxy.url, "\(sources)")
        #expect(sources.first { ($0["url"] as? String) == direct }?["proxy"] is NSNull, "\(sources)")
        #expect(text.stderr.contains("each source through its own proxy or direct ("), "\(text.stderr)")
        #expect(!text.stderr.contains("-> \(base.path)/text.bin via the proxy"), "\(text.stderr)")
        #expect(text.stderr.contains("\(proxied) via the proxy \(proxy.url):"), "\(text.stderr)")
        #expect(text.stderr.contains("\(direct):"), "\(text.stderr)")
    }

    /// A source forwarded through a proxy that refuses its user name and password (tinyproxy answers 401, not
    /// 407) is dropped saying the answer came through the proxy and what to check, not as the server's own 401;
    /// the source that goes direct finishes the file.
    @Test(.needsProxy) func aSourceWhoseProxyRefusesItsPasswordSaysItCameThroughTheProxy() async throws {
        let base = try GetCommandTests.directory("mirror-proxy-401")
        defer { try? FileManager.default.removeItem(at: base) }
        let proxy = try Tinyproxy(basicAuth: "fleet s3cret")
        defer { proxy.stop() }
        let two = try await ProxiedAndDirect(seed: 94)
        let output = base.appendingPathComponent("out.bin").path
        let run = try two.get(proxy: "http://fleet:wrong@127.0.0.1:\(proxy.port)", output: output)
        try await two.shutdown()
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(Self.sha256(file: output) == two.content.sha256Hex())
        let said = "it answered HTTP 401 through the proxy http://fleet:<redacted>@127.0.0.1:\(proxy.port)"
        #expect(run.stderr.contains(said), "\(run.stderr)")
        #expect(run.stderr.contains("user name and password in its URL; check them"), "\(run.stderr)")
        #expect(!run.stderr.contains("wrong"), "the password was shown: \(run.stderr)")
    }

    /// Two range servers of one 2 MiB file: `get` fetches it from both, the first through `proxy` and the second
    /// direct (`no_proxy=localhost`).
    struct ProxiedAndDirect {
        let content: RangeContent
        let a: RangeServer
        let b: RangeServer
        var proxied: String { a.url("/f.bin") }
        var direct: String { "http://localhost:\(b.port)/f.bin" }

        init(seed: UInt64) async throws {
            content = RangeContent.generated(size: 2 << 20, seed: seed)
            a = try await RangeServer.start(content: content)
            b = try await RangeServer.start(content: content)
        }

        func get(proxy: String, output: String, _ extra: [String] = []) throws -> BinaryRun {
            try BinaryRun.run(
                [
                    "-c", "no_proxy=localhost exec \"$@\"", "sh", RepoPaths.binary, "get", proxied, direct,
                    "--proxy", proxy, "-o", output,
                ] + extra, executable: "/bin/sh")
        }

        func shutdown() async throws {
            try await a.shutdown()
            try await b.shutdown()
        }
    }

    @Test func aMetalinkFileNamesTheOutputAndItsPiecesAreChecked() async throws {
        let base = try GetCommandTests.directory("meta4")
        defer { try? FileManager.default.removeItem(at: base) }
        let content = RangeContent.generated(size: 3 << 20, seed: 92)
        let a = try await RangeServer.start(content: content)
        let b = try await RangeServer.start(content: content)
        let meta4 = base.appendingPathComponent("f.meta4").path
        try Self.meta4(content.allBytes(), urls: [a.url("/x"), b.url("/y")], name: "named.bin")
            .write(toFile: meta4, atomically: true, encoding: .utf8)
        let run = try BinaryRun.run(
            [
                "-c", "cd \"$1\" && exec \"$2\" get --metalink \"$3\"", "sh", base.path, RepoPaths.binary, meta4,
            ], executable: "/bin/sh")
        try await a.shutdown()
        try await b.shutdown()
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(Self.sha256(file: base.appendingPathComponent("named.bin").path) == content.sha256Hex())
    }

    @Test(arguments: [
        (
            "bomb",
            "<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\"><!ENTITY lol2 \"&lol;&lol;&lol;&lol;\">]><metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"><file name=\"a\"><size>&lol2;</size></file></metalink>",
            "entit"
        ),
        (
            "size",
            "<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"><file name=\"a\"><size>99999999999999999999</size><url>http://127.0.0.1:9/a</url></file></metalink>",
            "size"
        ),
        (
            "hex",
            "<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"><file name=\"a\"><hash type=\"sha-256\">zz</hash><url>http://127.0.0.1:9/a</url></file></metalink>",
            "hex"
        ),
        (
            "bidi",
            "<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"><file name=\"evil\u{202E}gnp.exe\"><size>1</size><url>http://127.0.0.1:9/a</url></file></metalink>",
            "invisible"
        ),
        (
            "pieces",
            "<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"><file name=\"a\"><size>1125899906842624</size><pieces length=\"1024\" type=\"sha-256\"><hash>\(String(repeating: "0", count: 64))</hash></pieces><url>http://127.0.0.1:9/a</url></file></metalink>",
            "piece"
        ),
    ])
    func aHostileMetalinkFileIsRefusedAtOnce(name: String, document: String, word: String) throws {
        let base = try GetCommandTests.directory("hostile-\(name)")
        defer { try? FileManager.default.removeItem(at: base) }
        let meta4 = base.appendingPathComponent("h.meta4").path
        try document.write(toFile: meta4, atomically: true, encoding: .utf8)
        let run = try BinaryRun.run(["get", "--metalink", meta4, "-o", base.appendingPathComponent("out").path])
        #expect(run.status == 65, "\(run.stdout)\(run.stderr)")
        #expect(run.stderr.lowercased().contains(word), "\(run.stderr)")
        #expect(run.stderr.contains("h.meta4"), "the message names the file: \(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: base.appendingPathComponent("out").path))
    }

    @Test func aDeltaTakesOneURL() throws {
        let run = try BinaryRun.run(["get", "http://127.0.0.1:9/a", "http://127.0.0.1:9/b", "--zsync", "-o", "/tmp/x"])
        #expect(run.status == 64, "\(run.stderr)")
        #expect(run.stderr.contains("--zsync takes one URL"))
    }
}
