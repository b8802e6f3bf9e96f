import Foundation
import TestSupport
import Testing

/// What a user without root runs first: `meterwise demo` and a `get` from the embedded server. (The
/// embedded server once asked for SO_DEBUG instead of TCP_NODELAY, which only root may set: every
/// connection was closed at once for anyone else, and the demo never downloaded a byte.)
@Suite(.serialized, .needsOtherUser, .needsBinary)
struct OrdinaryUserTests {
    @Test func theDemoCompletesAsAnOrdinaryUser() throws {
        let run = try BinaryRun.run(["demo", "--speed", "16", "--json"], prefix: SecurityTests.asNobody)
        #expect(run.status == 0, "\(run.stderr)")
        let last = try #require(run.stdout.split(separator: "\n").last.map(String.init))
        #expect(last.contains("\"state\":\"completed\""), "\(last)")
        #expect(last.contains("\"sha256_ok\":true"), "\(last)")
    }
}
