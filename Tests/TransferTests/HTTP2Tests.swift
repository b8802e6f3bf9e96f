import Foundation
import TestSupport
import Testing

@testable import Transfer

/// HTTP/2 where nginx offers it (`DownloadRequest.http2`, `get --http2`): the segments are streams of one
/// connection, with the same range checks; without the option, HTTP/1.1 connections as before.
@Suite(.serialized, .needsOpenSSL, .needsNginx)
struct HTTP2Tests {
    @Test(arguments: [true, false])
    func segmentsAreStreamsOfOneConnectionWhenAsked(http2: Bool) async throws {
        try await TLSCommandTests.withTLSNginx(size: 24 << 20, http2: true) { pki, nginx, fixture, sha in
            try await Self.check(http2: http2, pki: pki, nginx: nginx, fixture: fixture, sha: sha)
        }
    }

    static func check(http2: Bool, pki: TestPKI, nginx: Nginx, fixture: Fixture, sha: String) async throws {
        var request = DownloadRequest(url: nginx.url("/object.bin"), destination: fixture.path("out.bin"))
        request.computeSHA256 = true
        request.tls = try TLSSettings.load(caFile: pki.path("ca.crt"))
        request.http2 = http2
        guard case .completed(let result) = try await Download(request: request).run() else {
            Issue.record("not completed")
            return
        }
        #expect(result.sha256 == sha)
        #expect(result.discardedBytes == 0)
        #expect(result.refetchedBytes == 0)
        let log = try String(contentsOfFile: nginx.prefix + "/logs/access.log", encoding: .utf8)
        let lines = log.split(separator: "\n")
        #expect(lines.count >= 4, "\(log)")
        for line in lines {
            #expect(line.contains(http2 ? "HTTP/2.0\" 206" : "HTTP/1.1\" 206"), "\(line)")
        }
    }
}
