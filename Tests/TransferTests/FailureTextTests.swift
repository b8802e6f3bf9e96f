import NIOCore
import NIOHTTP1
import NIOSSL
import Testing

@testable import Transfer

/// `FailureText`: what a failed request says to a person, never a library's type name.
struct FailureTextTests {
    @Test func aNameThatDoesNotResolveAndACutTLSConnectionAreSaidInWords() {
        let dns = FailureText.describe(SocketAddressError.unknown(host: "mirror.example", port: 80))
        #expect(dns.contains("could not be resolved (DNS)"), "\(dns)")
        let cut = FailureText.describe(NIOSSLError.uncleanShutdown)
        #expect(cut == "the TLS connection was cut without its close_notify")
        #expect(FailureText.describe(IOError(errnoCode: 111, reason: "connect")) == "connection refused")
        #expect(
            FailureText.describe(HTTPParserError.invalidEOFState)
                == "the connection ended in the middle of the response")
        for text in [dns, cut] { #expect(!text.contains("Error") && !text.contains("uncleanShutdown")) }
    }
}
