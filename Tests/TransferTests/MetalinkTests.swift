import Foundation
import NIOHTTP1
import TestSupport
import Testing

@testable import Transfer

@Suite struct MetalinkTests {
    /// `count` bytes of `byte`, and the same as hex.
    private static func digest(_ byte: UInt8, _ count: Int) -> [UInt8] { [UInt8](repeating: byte, count: count) }
    private static func hex(_ byte: UInt8, _ count: Int) -> String {
        String(repeating: String(format: "%02x", byte), count: count)
    }

    private static func parse(_ text: String, limits: Metalink.Limits = .init()) throws(TransferError) -> Metalink {
        try Metalink.parse(Array(text.utf8), source: "t.meta4", limits: limits)
    }

    /// The message of the error parsing `text` throws, or "" when it parses.
    private static func refusal(_ text: String, limits: Metalink.Limits = .init()) -> String {
        refusal(Array(text.utf8), limits: limits)
    }

    private static func refusal(_ bytes: [UInt8], limits: Metalink.Limits = .init()) -> String {
        do {
            _ = try Metalink.parse(bytes, source: "t.meta4", limits: limits)
            return ""
        } catch {
            #expect(error.code == .metalink)
            return error.message
        }
    }

    /// A v4 document around `body` (the children of `metalink`).
    private static func v4(_ body: String) -> String {
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">\n\(body)\n</metalink>\n"
    }

    /// A v4 document of one file `f` with `children`.
    private static func v4File(_ children: String) -> String {
        v4("<file name=\"f\">\(children)</file>")
    }

    // MARK: - Documents that parse

    @Test func readsAMetalink4File() throws {
        let size = 2_500_000  // three pieces of 1 MiB
        let document = Self.v4(
            """
            <generator>MirrorBrain/2.19.0</generator>
            <published>2024-05-01T12:00:00Z</published>
            <file name="debian-12.iso">
              <size>\(size)</size>
              <hash type="sha-256">\(Self.hex(0xAB, 32).uppercased())</hash>
              <hash type="sha-1">\(Self.hex(0x01, 20))</hash>
              <hash type="md5">\(Self.hex(0x02, 16))</hash>
              <pieces length="1048576" type="sha-256">
                <hash>\(Self.hex(0x10, 32))</hash>
                <hash>\(Self.hex(0x11, 32))</hash>
                <hash>\(Self.hex(0x12, 32))</hash>
              </pieces>
              <metaurl mediatype="torrent" priority="1">https://t.example/debian-12.iso.torrent</metaurl>
              <url location="us" priority="30">
                https://us.example/debian-12.iso
              </url>
              <url location="DE" priority="10">https://de.example/pub/debian-12.iso</url>
              <url priority="5">ftp://ftp.example/debian-12.iso</url>
              <url location="xyz">HTTP://plain.example:8080/debian-12.iso</url>
              <url location="fr" priority="20"><![CDATA[https://fr.example/debian-12.iso?a=1&b=2]]></url>
              <url priority="40">https://de.example/pub/debian-12.iso</url>
            </file>
            <file name="debian-12.iso.sig"><url>https://de.example/pub/debian-12.iso.sig</url></file>
            """)
        let expected = Metalink(files: [
            Metalink.File(
                name: "debian-12.iso", size: Int64(size),
                hashes: [.sha256: Self.digest(0xAB, 32), .sha1: Self.digest(0x01, 20)],
                pieces: Metalink.Pieces(
                    kind: .sha256, length: 1 << 20,
                    hashes: [Self.digest(0x10, 32), Self.digest(0x11, 32), Self.digest(0x12, 32)]),
                sources: [
                    .init(url: "https://de.example/pub/debian-12.iso", priority: 10, location: "de"),
                    .init(url: "https://fr.example/debian-12.iso?a=1&b=2", priority: 20, location: "fr"),
                    .init(url: "https://us.example/debian-12.iso", priority: 30, location: "us"),
                    .init(url: "HTTP://plain.example:8080/debian-12.iso", priority: nil, location: nil),
                ]),
            Metalink.File(
                name: "debian-12.iso.sig", size: nil, hashes: [:], pieces: nil,
                sources: [.init(url: "https://de.example/pub/debian-12.iso.sig", priority: nil, location: nil)]),
        ])
        #expect(try Self.parse(document) == expected)
    }

    @Test func readsAMetalink3File() throws {
        let document = """
            <?xml version="1.0" encoding="utf-8"?>
            <metalink version="3.0" xmlns="http://www.metalinker.org/" type="static">
              <publisher><name>Example</name></publisher>
              <files>
                <file name="tool.tar.gz">
                  <size>600000</size>
                  <verification>
                    <hash type="md5">\(Self.hex(0x02, 16))</hash>
                    <hash type="sha1">\(Self.hex(0x03, 20))</hash>
                    <hash type="sha256">\(Self.hex(0x04, 32))</hash>
                    <pieces length="262144" type="sha1">
                      <hash piece="2">\(Self.hex(0x22, 20))</hash>
                      <hash piece="0">\(Self.hex(0x20, 20))</hash>
                      <hash piece="1">\(Self.hex(0x21, 20))</hash>
                    </pieces>
                  </verification>
                  <resources>
                    <url type="ftp" location="us" preference="100">ftp://ftp.example/tool.tar.gz</url>
                    <url type="bittorrent" preference="100">https://t.example/tool.tar.gz.torrent</url>
                    <url type="http" location="se" preference="90">http://se.example/tool.tar.gz</url>
                    <url type="http" location="us" preference="100">http://us.example/tool.tar.gz</url>
                  </resources>
                </file>
              </files>
            </metalink>
            """
        let expected = Metalink(files: [
            Metalink.File(
                name: "tool.tar.gz", size: 600_000,
                hashes: [.sha1: Self.digest(0x03, 20), .sha256: Self.digest(0x04, 32)],
                pieces: Metalink.Pieces(
                    kind: .sha1, length: 262_144,
                    hashes: [Self.digest(0x20, 20), Self.digest(0x21, 20), Self.digest(0x22, 20)]),
                sources: [
                    .init(url: "http://us.example/tool.tar.gz", priority: 1, location: "us"),
                    .init(url: "http://se.example/tool.tar.gz", priority: 11, location: "se"),
                ])
        ])
        #expect(try Self.parse(document) == expected)
    }

    @Test func prefersSHA256PiecesAndSkipsUnknownOnes() throws {
        let document = Self.v4File(
            """
            <size>2048</size>
            <pieces type="sha-1" length="1024"><hash>\(Self.hex(1, 20))</hash><hash>\(Self.hex(2, 20))</hash></pieces>
            <pieces type="md5" length="x"><hash>not even hex</hash></pieces>
            <pieces type="sha-256" length="2048"><hash>\(Self.hex(3, 32))</hash></pieces>
            """)
        let file = try #require(try Self.parse(document).files.first)
        #expect(file.pieces == Metalink.Pieces(kind: .sha256, length: 2048, hashes: [Self.digest(3, 32)]))
        #expect(file.sources.isEmpty)
    }

    @Test func acceptsAPrefixedNamespaceAndForeignElements() throws {
        let document = """
            <?xml-stylesheet type="text/xsl" href="metalink.xsl"?>
            <m:metalink xmlns:m="urn:ietf:params:xml:ns:metalink" xmlns:x="urn:example">
            <m:file name="a"><?x y?><!-- a comment --><x:size>5</x:size><m:size>7</m:size><x:url>https://x.example/a</x:url></m:file>
            </m:metalink>
            """
        #expect(try Self.parse(document).files == [.init(name: "a", size: 7, hashes: [:], pieces: nil, sources: [])])
    }

    // MARK: - Documents that are refused

    private static let billionLaughs = """
        <?xml version="1.0"?>
        <!DOCTYPE lolz [
          <!ENTITY lol "lol">
          <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
          <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
          <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
          <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
        ]>
        <metalink xmlns="urn:ietf:params:xml:ns:metalink"><file name="&lol9;"/></metalink>
        """

    @Test(
        arguments: [
            ("entity bomb", billionLaughs, "entity bomb"),
            ("DOCTYPE alone", "<!DOCTYPE metalink SYSTEM \"http://x.example/m.dtd\">" + v4File(""), "needs no DTD"),
            ("ENTITY alone", v4File("<!ENTITY x \"y\">"), "entity declarations are refused"),
            ("empty", "", "is empty"),
            ("whitespace", "  \n", "no `metalink` element"),
            ("UTF-7", "<?xml version=\"1.0\" encoding=\"UTF-7\"?>" + "<metalink/>", "encoding `UTF-7`"),
            ("no file", v4("<generator>x</generator>"), "no `file` element"),
            ("instruction without data", v4File("<?x?>"), "processing instruction without data"),
            ("broken declaration", "<?xml?>" + v4File(""), "processing instruction without data"),
            ("wrong root", "<feed xmlns=\"http://www.w3.org/2005/Atom\"><file name=\"f\"/></feed>", "root element"),
            ("no namespace", "<metalink><file name=\"f\"/></metalink>", "in no namespace"),
            ("huge size", v4File("<size>99999999999999999999999</size>"), "1 PiB"),
            ("negative size", v4File("<size>-5</size>"), "`-5` is not a number of bytes"),
            ("size with spaces", v4File("<size>1 000</size>"), "is not a number of bytes"),
            ("two sizes", v4File("<size>1</size><size>1</size>"), "more than one `size`"),
            ("bad hex", v4File("<hash type=\"sha-256\">\(String(repeating: "zz", count: 32))</hash>"), "hex digits"),
            ("short hash", v4File("<hash type=\"sha-1\">\(hex(1, 19))</hash>"), "is not 40 hex digits"),
            (
                "two hashes",
                v4File("<hash type=\"sha-1\">\(hex(1, 20))</hash><hash type=\"sha1\">\(hex(2, 20))</hash>"),
                "two different sha-1"
            ),
            ("parent directory", v4("<file name=\"../x\"/>"), "directories are not supported"),
            ("subdirectory", v4("<file name=\"a/b\"/>"), "directories are not supported"),
            ("backslash", v4("<file name=\"a\\b\"/>"), "directories are not supported"),
            ("dot dot", v4("<file name=\"..\"/>"), "starts with a dot"),
            ("hidden", v4("<file name=\".bashrc\"/>"), "starts with a dot"),
            ("control", v4("<file name=\"a&#9;b\"/>"), "control character"),
            ("no name", v4("<file/>"), "has no `name`"),
            ("long name", v4("<file name=\"\(String(repeating: "é", count: 128))\"/>"), "longer than 236 bytes"),
            (
                "no room for the partial's name", v4("<file name=\"\(String(repeating: "m", count: 237))\"/>"),
                "longer than 236"
            ),
            ("blanks", v4("<file name=\"   \"/>"), "only blanks"),
            ("same name", v4("<file name=\"a\"/><file name=\"a\"/>"), "two `file` elements are named `a`"),
            (
                "billion pieces",
                v4File(
                    "<size>\(1 << 50)</size><pieces type=\"sha-256\" length=\"1024\"><hash>\(hex(1, 32))</hash></pieces>"
                ),
                "1099511627776 pieces, more than the 4194304 accepted"
            ),
            (
                "too few pieces",
                v4File(
                    "<size>3000</size><pieces type=\"sha-256\" length=\"1024\"><hash>\(hex(1, 32))</hash>"
                        + "<hash>\(hex(2, 32))</hash></pieces>"),
                "has 2 piece hashes where 3000 bytes in pieces of 1024 need 3"
            ),
            (
                "too many pieces",
                v4File(
                    "<size>1000</size><pieces type=\"sha-256\" length=\"1024\"><hash>\(hex(1, 32))</hash>"
                        + "<hash>\(hex(2, 32))</hash></pieces>"),
                "more hashes than the 1 that 1000 bytes"
            ),
            (
                "size after pieces",
                v4File(
                    "<pieces type=\"sha-256\" length=\"1024\"><hash>\(hex(1, 32))</hash></pieces><size>3000</size>"),
                "has 1 piece hashes where 3000 bytes in pieces of 1024 need 3"
            ),
            ("no piece hash", v4File("<pieces type=\"sha-1\" length=\"1024\"></pieces>"), "no hash"),
            ("small pieces", v4File("<pieces type=\"sha-1\" length=\"512\"/>"), "from 1 KiB"),
            (
                "bad piece hash", v4File("<pieces type=\"sha-1\" length=\"1024\"><hash>xyz</hash></pieces>"),
                "piece hash 1"
            ),
            (
                "piece index twice",
                v4File(
                    "<pieces type=\"sha-1\" length=\"1024\"><hash piece=\"0\">\(hex(1, 20))</hash>"
                        + "<hash piece=\"0\">\(hex(2, 20))</hash></pieces>"),
                "piece index 0 is given twice"
            ),
            (
                "piece index out of range",
                v4File("<pieces type=\"sha-1\" length=\"1024\"><hash piece=\"1\">\(hex(1, 20))</hash></pieces>"),
                "piece index 1 is out of range"
            ),
            ("priority zero", v4File("<url priority=\"0\">https://a.example/f</url>"), "priority `0`"),
            ("priority word", v4File("<url priority=\"high\">https://a.example/f</url>"), "priority `high`"),
            ("not well-formed", v4File("<size>1</size>\n<url>\n</file>"), "t.meta4:5: the file is not well-formed XML"),
            ("cut short", "<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">\n<file name=\"f\">", "well-formed"),
        ] as [(String, String, String)])
    func refuses(_ what: String, _ document: String, _ telling: String) {
        let message = Self.refusal(document)
        #expect(message.contains(telling), "\(what): \(message)")
        #expect(message.hasPrefix("t.meta4"), "\(what): \(message)")
        #expect(message.contains("Get a new .meta4"), "\(what): \(message)")
    }

    @Test func refusesADocumentOverMaxBytes() {
        let padding = String(repeating: " ", count: Metalink.maxBytes)
        #expect(Self.refusal(Self.v4File(padding)).contains("more than the 16 MiB accepted"))
    }

    /// libxml2 reads UTF-16 with or without a byte order mark, where `<!DOCTYPE` is not those bytes.
    @Test func refusesUTF16() {
        var bytes: [UInt8] = []
        for unit in (Self.billionLaughs).utf16 { bytes += [UInt8(unit & 0xFF), UInt8(unit >> 8)] }
        #expect(Self.refusal(bytes).contains("not UTF-8"))
        #expect(Self.refusal([0xFF, 0xFE] + bytes).contains("not UTF-8"))
    }

    @Test func refusesLongText() {
        let url = "https://a.example/" + String(repeating: "a", count: 70_000)
        #expect(Self.refusal(Self.v4File("<url>\(url)</url>")).contains("longer than the 64 KiB accepted"))
        #expect(Self.refusal(Self.v4File("<x>\(url)</x>")).contains("longer than the 64 KiB accepted"))
    }

    @Test func refusesTooManyFilesAndURLs() {
        let files = (0...1000).map { "<file name=\"f\($0)\"/>" }.joined()
        #expect(Self.refusal(Self.v4(files)).contains("more than 1000 files"))
        #expect(Self.refusal(Self.v4((0..<1000).map { "<file name=\"f\($0)\"/>" }.joined())).isEmpty)
        let urls = String(repeating: "<url>ftp://a.example/f</url>", count: 1001)
        #expect(Self.refusal(Self.v4File(urls)).contains("more than the 1000 URLs accepted"))
    }

    /// The bounds no document under 16 MiB reaches are checked with lowered limits.
    @Test func stopsAtTheStructuralBounds() {
        var limits = Metalink.Limits()
        limits.pieces = 4
        let hashes = String(repeating: "<hash>\(Self.hex(1, 20))</hash>", count: 5)
        let pieces = Self.v4File("<pieces type=\"sha-1\" length=\"1024\">\(hashes)</pieces>")
        #expect(Self.refusal(pieces, limits: limits).contains("more than the 4 hashes accepted"))
        limits = Metalink.Limits()
        limits.elements = 50
        let many = Self.v4File(String(repeating: "<x/>", count: 50))
        #expect(Self.refusal(many, limits: limits).contains("more than 50 elements"))
        let deep = String(repeating: "<x>", count: 40) + String(repeating: "</x>", count: 40)
        #expect(Self.refusal(Self.v4File(deep)).contains("nested more than 32 deep"))
    }

    /// Random and mutated documents: whatever the bytes, `parse` returns or throws `.metalink`. The seed is
    /// printed so a failure can be replayed.
    @Test func survivesMutatedDocuments() {
        let seed = SplitMix.seed(from: "METERWISE_METALINK_SEED")
        print("MetalinkTests: seed \(seed) (replay with METERWISE_METALINK_SEED=\(seed))")
        var random = SplitMix(seed: seed)
        let original = Array(
            Self.v4File(
                "<size>2048</size><hash type=\"sha-256\">\(Self.hex(7, 32))</hash>"
                    + "<pieces type=\"sha-1\" length=\"1024\"><hash piece=\"1\">\(Self.hex(1, 20))</hash>"
                    + "<hash piece=\"0\">\(Self.hex(2, 20))</hash></pieces>"
                    + "<url priority=\"3\" location=\"de\">https://a.example/f</url>"
            ).utf8)
        let alphabet = Array("<>/=\"'&;!-?[]:# 0123456789abcdefx\n\u{0}".utf8) + [0xC3, 0xA9, 0xFF]
        for round in 0..<3000 {
            var bytes = original
            for _ in 0..<(1 + Int(random.next() % 8)) {
                let at = Int(random.next() % UInt64(bytes.count + 1))
                let byte = Self.draw(1, from: alphabet, &random)[0]
                switch random.next() % 4 {
                case 0 where at < bytes.count: bytes[at] = byte
                case 1: bytes.insert(byte, at: at)
                case 2 where at < bytes.count: bytes.remove(at: at)
                default: bytes = Array(bytes.prefix(at))
                }
            }
            if round % 10 == 0 {
                bytes = Self.draw(Int(random.next() % 200), from: alphabet, &random)
            }
            _ = Self.refusal(bytes)
        }
    }

    /// `count` bytes drawn from `alphabet`.
    private static func draw(_ count: Int, from alphabet: [UInt8], _ random: inout SplitMix) -> [UInt8] {
        (0..<count).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }
    }

    // MARK: - Value checks

    @Test(
        arguments: [
            ("https://a.example/f", true),
            ("HTTP://a.example", true),
            ("http://user:pw@a.example:8080/f?q#x", true),
            ("http://[2001:db8::1]:80/f", true),
            ("http://a.example:/f", true),
            ("http://a.example:99999/f", false),
            ("http:///f", false),
            ("http://[]/f", false),
            ("http://a.example/a b", false),
            ("http://a.example/\u{85}", false),
            ("ftp://a.example/f", false),
            ("https:a.example", false),
            ("//a.example/f", false),
            ("https://a.example/" + String(repeating: "a", count: 4096), false),
        ] as [(String, Bool)])
    func checksURLs(_ url: String, _ fetchable: Bool) {
        #expect(Metalink.isFetchableURL(url) == fetchable)
    }

    @Test func decodesHexStrictly() {
        #expect(Metalink.bytes(hex: "00fFaB", count: 3) == [0x00, 0xFF, 0xAB])
        #expect(Metalink.bytes(hex: "00fFa", count: 3) == nil)
        #expect(Metalink.bytes(hex: "0g", count: 1) == nil)
        #expect(Metalink.bytes(hex: "+1", count: 1) == nil)
    }

    @Test func digestsThatDisagreeOnTheWayCountAsNone() {
        let a = Data(repeating: 1, count: 32).base64EncodedString()
        let b = Data(repeating: 2, count: 32).base64EncodedString()
        var announced = Announced()
        announced.read(
            HTTPHeaders([("Digest", "SHA-256=\(a)"), ("Link", "</m>; rel=duplicate")]), from: "http://o.example/r")
        #expect(announced.digests[.sha256] == Array(repeating: 1, count: 32))
        announced.read(HTTPHeaders([("Repr-Digest", "sha-256=:\(a):")]), from: "http://m.example/f")
        #expect(announced.digests[.sha256] != nil, "the same digest twice is one")
        announced.read(HTTPHeaders([("Repr-Digest", "sha-256=:\(b):")]), from: "http://m.example/f")
        #expect(announced.digests.isEmpty)
        #expect(announced.duplicates.map(\.url) == ["http://o.example/m"])
    }

    // MARK: - Link: rel=duplicate

    @Test func readsDuplicateLinks() {
        let links = SourceHeaders.duplicates(
            linkValues: [
                "<https://b.example/f.iso>; rel=duplicate; pri=2; geo=DE, <https://c.example/f.iso>;rel=\"duplicate\";pri=1",
                "</mirror/f.iso>; rel=\"describedby duplicate\"; title=\"a, b; c\"; geo=x1",
                "<f2.iso>; rel=duplicate; pri=0, <ftp://d.example/f.iso>; rel=duplicate; pri=1",
                "<https://e.example/f.meta4>; rel=describedby; type=\"application/metalink4+xml\"",
                "<https://f.example/f.iso>; rel=duplicate garbage, <https://g.example/f.iso>; REL=DUPLICATE; pri=\"3\"",
                "<https://b.example/f.iso>; rel=duplicate; pri=9",
            ],
            base: "https://origin.example/pub/f.iso?token=1")
        #expect(
            links == [
                .init(url: "https://c.example/f.iso", priority: 1, location: nil),
                .init(url: "https://b.example/f.iso", priority: 2, location: "de"),
                .init(url: "https://g.example/f.iso", priority: 3, location: nil),
                .init(url: "https://origin.example/mirror/f.iso", priority: nil, location: nil),
                .init(url: "https://origin.example/pub/f2.iso", priority: nil, location: nil),
            ])
    }

    @Test func boundsDuplicateLinks() {
        let value = (0..<100).map { "<https://m\($0).example/f>; rel=duplicate" }.joined(separator: ", ")
        let links = SourceHeaders.duplicates(linkValues: [value], base: "https://origin.example/f")
        #expect(links.count == 32)
        #expect(links.first?.url == "https://m0.example/f")
        #expect(SourceHeaders.duplicates(linkValues: ["</f>; rel=duplicate"], base: "ftp://x.example/").isEmpty)
        #expect(SourceHeaders.duplicates(linkValues: ["<https://a.example/f>; rel=\"duplicate"], base: "").isEmpty)
    }

    @Test func survivesRandomHeaderValues() {
        let seed = SplitMix.seed(from: "METERWISE_METALINK_SEED")
        print("MetalinkTests: seed \(seed) (replay with METERWISE_METALINK_SEED=\(seed))")
        var random = SplitMix(seed: seed)
        let alphabet = Array("<>;,=\"\\ \trel=duplicatepri9geo/:https.x".utf8)
        for _ in 0..<3000 {
            let bytes = Self.draw(Int(random.next() % 120), from: alphabet, &random)
            let value = String(decoding: bytes, as: UTF8.self)
            for link in SourceHeaders.duplicates(linkValues: [value], base: "https://o.example/a/b") {
                #expect(Metalink.isFetchableURL(link.url))
            }
            _ = SourceHeaders.digests(digestValues: [value], reprDigestValues: [value])
        }
    }

    // MARK: - Digest and Repr-Digest

    private static let emptySHA256 = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
    private static let emptySHA1 = "2jmj7l5rSw0yVb/vlWAYkK/YBwk="
    private static let emptySHA256Bytes = Metalink.bytes(
        hex: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", count: 32)
    private static let emptySHA1Bytes = Metalink.bytes(hex: "da39a3ee5e6b4b0d3255bfef95601890afd80709", count: 20)

    @Test func readsDigest() {
        let digests = SourceHeaders.digests(
            digestValues: ["MD5=1B2M2Y8AsgTpgAmY7PhCfg==, sha-256=\(Self.emptySHA256)", "SHA=\(Self.emptySHA1)"],
            reprDigestValues: [])
        #expect(digests == [.sha256: Self.emptySHA256Bytes, .sha1: Self.emptySHA1Bytes])
    }

    @Test func readsReprDigest() {
        let digests = SourceHeaders.digests(
            digestValues: [],
            reprDigestValues: ["sha-512=:\(String(repeating: "A", count: 86))==:, sha-256=:\(Self.emptySHA256):;x=1"])
        #expect(digests == [.sha256: Self.emptySHA256Bytes])
    }

    @Test func reprDigestWinsAndBadValuesAreIgnored() {
        let other = Data(repeating: 7, count: 32).base64EncodedString()
        let digests = SourceHeaders.digests(
            digestValues: [
                "SHA-256=\(Self.emptySHA1)", "SHA-256=not*base64", "SHA-256=\(other)", "SHA-256=\(Self.emptySHA256)",
                "SHA=\(Self.emptySHA256)",
            ],
            reprDigestValues: ["sha-256=\(Self.emptySHA256)", "sha-256=:\(Self.emptySHA256.dropLast()):"])
        #expect(digests == [.sha256: Self.emptySHA256Bytes])
        let first = SourceHeaders.digests(digestValues: ["SHA-256=\(other)"], reprDigestValues: [])
        #expect(first == [.sha256: [UInt8](repeating: 7, count: 32)])
    }

    @Test(
        arguments: [
            ("", [UInt8]()), ("Zg==", [0x66]), ("Zg", [0x66]), ("Zm8=", [0x66, 0x6F]), ("Zm9v", [0x66, 0x6F, 0x6F]),
            ("Zh==", nil), ("Z", nil), ("Zg=", nil), ("Z===", nil), ("Zm 9v", nil), ("Zm-v", nil), ("=Zm9", nil),
        ] as [(String, [UInt8]?)])
    func decodesBase64Strictly(_ text: String, _ expected: [UInt8]?) {
        #expect(SourceHeaders.base64(text) == expected)
    }
}
