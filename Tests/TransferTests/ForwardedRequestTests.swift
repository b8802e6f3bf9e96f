import Foundation
import Testing

@testable import Transfer

/// http:// through an HTTP proxy as curl sends it (absolute form, no tunnel), and what a proxy's refusal
/// says: pure.
struct ForwardedRequestTests {
    let proxy = ProxyServer(kind: .http, host: "127.0.0.1", port: 3128)

    @Test(
        arguments: [
            ("http://mirror.example:8080/a/b.iso?x=1", "http://127.0.0.1:3128/a/b.iso?x=1", "mirror.example:8080"),
            ("http://mirror.example", "http://127.0.0.1:3128/", "mirror.example"),
            ("http://mirror.example?q", "http://127.0.0.1:3128/?q", "mirror.example"),
            ("http://u:p@[::1]:81/f#frag", "http://127.0.0.1:3128/f", "[::1]:81"),
        ])
    func theRequestGoesToTheProxyWithTheOriginInHost(_ url: String, _ clientURL: String, _ host: String) {
        let forwarded = ForwardedRequest.make(url, through: proxy)
        #expect(forwarded == ForwardedRequest(clientURL: clientURL, host: host))
    }

    @Test func httpsAndNonsenseAreNotForwarded() {
        #expect(ForwardedRequest.make("https://mirror.example/f", through: proxy) == nil)
        #expect(ForwardedRequest.make("http:///f", through: proxy) == nil)
        #expect(ForwardedRequest.make("ftp://mirror.example/f", through: proxy) == nil)
    }

    @Test func anIPv6ProxyIsBracketed() {
        let six = ProxyServer(kind: .http, host: "::1", port: 3128)
        #expect(ForwardedRequest.make("http://a/f", through: six)?.clientURL == "http://[::1]:3128/f")
    }

    @Test func squidsRefusalIsReadWithItsReason() throws {
        let head =
            "HTTP/1.1 403 Forbidden\r\nServer: squid/5.7\r\nX-Squid-Error: ERR_ACCESS_DENIED 0\r\nContent-Length: 3398"
        let answer = try #require(ProxyAnswer(head: head))
        #expect(answer.status == 403)
        #expect(answer.shown == "403 Forbidden (ERR_ACCESS_DENIED 0)")
        let text = ProxyAnswerText.refusedTunnel(answer, proxy: proxy, target: "mirror.example:8443")
        #expect(text.contains("refused to open a tunnel to mirror.example:8443: 403 Forbidden (ERR_ACCESS_DENIED 0)"))
        #expect(text.contains("SSL_ports"))
    }

    @Test(arguments: ["", "HTTP/1.1", "HTTP/1.1 99 Low", "HTTP/1.1 abc Bad", "SSH-2.0-OpenSSH", "HTTP/1.1 6000 x"])
    func notAnAnswer(_ head: String) {
        #expect(ProxyAnswer(head: head) == nil)
    }

    @Test func anAnswerWithoutAReasonPhrase() {
        #expect(ProxyAnswer(head: "HTTP/1.0 407")?.shown == "407")
    }
}

/// Where a content check takes its samples: inside the verified pieces, at most three, never past one.
struct ContentSampleTests {
    func piece(_ offset: Int64, _ length: Int64) -> Checkpoint.Piece {
        Checkpoint.Piece(offset: offset, length: length, crc32c: "00000000")
    }

    @Test func threeSamplesInsideThePieces() {
        let mib: Int64 = 1 << 20
        let pieces = [piece(8 * mib, 4 * mib), piece(0, 4 * mib), piece(4 * mib, 100)]
        let samples = ContentCheck.samples(of: pieces)
        #expect(samples == [0..<(64 << 10), (4 * mib)..<(4 * mib + 100), (12 * mib - (64 << 10))..<(12 * mib)])
        for sample in samples {
            #expect(pieces.contains { $0.offset <= sample.lowerBound && sample.upperBound <= $0.offset + $0.length })
        }
    }

    @Test func oneSmallPieceIsOneSample() {
        #expect(ContentCheck.samples(of: [piece(0, 10)]) == [0..<10])
    }

    @Test func nothingOnDiskNothingToCompare() {
        #expect(ContentCheck.samples(of: []).isEmpty)
        #expect(ContentCheck.samples(of: [piece(0, 0)]).isEmpty)
    }

    /// A URL's credentials leave the URL and become the Basic value; an `@` past the authority is not one.
    @Test func urlCredentialsBecomeBasicAuthorization() {
        let split = URLCredentials.split("https://u%40corp:p%3Aw@[::1]:8443/f.bin?x=@y")
        #expect(split.url == "https://[::1]:8443/f.bin?x=@y")
        #expect(split.authorization == Data("u@corp:p:w".utf8).base64EncodedString())
        #expect(URLCredentials.split("http://user@h/f").authorization == Data("user:".utf8).base64EncodedString())
        #expect(URLCredentials.split("http://h/a@b").url == "http://h/a@b")
        #expect(URLCredentials.split("http://h/a@b").authorization == nil)
        let bad = URLCredentials.split("http://u:%zz@h/f")
        #expect(bad.url == "http://h/f" && bad.authorization == nil)
    }
}
