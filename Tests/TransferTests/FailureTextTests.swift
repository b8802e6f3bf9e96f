import NIOCore
import NIOHTTP1
import NIOSSL
import Testing

@testable import Transfer

/// `FailureText`: what a failed request says to a person, never a library's type name.
struct FailureTextTests {
    /// (A name that does not resolve, "the host name … could not be resolved (DNS)", comes from NIO's errors
    /// that only NIO can make; the attack on the release binary saw it.)
    @Test func aCutTLSConnectionAndACutResponseAreSaidInWords() {
        let cut = FailureText.describe(NIOSSLError.uncleanShutdown)
        #expect(cut == "the TLS connection was cut without its close_notify")
        #expect(FailureText.describe(IOError(errnoCode: 111, reason: "connect")) == "connection refused")
        #expect(
            FailureText.describe(HTTPParserError.invalidEOFState)
                == "the connection ended in the middle of the response")
        #expect(!cut.contains("Error") && !cut.contains("uncleanShutdown"))
    }
}
