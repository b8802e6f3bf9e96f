import Engine
import Foundation
import MeterwiseClient
import Policy
import Testing

@Suite struct JobStoreTests {
    @Test func jobsUsageAndLinkBytesSurviveReopening() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "store-\(UUID().uuidString)/jobs.sqlite"
        ).path
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        do {
            let store = try JobStore(path: path)
            var job = JobRecord(
                id: "a1", url: "http://127.0.0.1/x", destination: "/tmp/x", tags: ["os"], allowMetered: true)
            try store.insert(job)
            job.state = .waiting
            job.bytesDone = 1234
            job.rule = "pause-metered"
            try store.update(job)
            try store.saveAccounting(
                usage: Usage(bytes: ["cellular@1700000000": 42]),
                linkBytes: ["wwan0": (kind: "wwan", bytes: 99)])
            #expect(throws: EngineError.self) { try store.insert(job) }
        }
        let reopened = try JobStore(path: path)
        let job = try #require(try reopened.job("a1"))
        #expect(job.state == .waiting)
        #expect(job.bytesDone == 1234)
        #expect(job.tags == ["os"])
        #expect(job.allowMetered)
        #expect(job.rule == "pause-metered")
        #expect(try reopened.usage().used("cellular@1700000000") == 42)
        #expect(try reopened.linkBytes()["wwan0"]?.bytes == 99)
        #expect(try reopened.jobs().count == 1)
    }

    @Test func unwritableStateDirectorySaysWhatToFix() {
        #expect {
            _ = try JobStore(path: "/proc/meterwise/jobs.sqlite")
        } throws: { error in
            "\(error)".contains("state directory is writable")
        }
    }
}
