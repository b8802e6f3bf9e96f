import Foundation
import TestSupport
import Testing

@testable import Transfer

/// `meterwise get` as a user runs it: SIGINT pauses with exit 130 and a JSON final line, and running
/// the same command again resumes and reports the sha256.
@Suite(.serialized)
struct GetCommandTests {
    static func run(_ arguments: [String], interruptAfter: Duration? = nil) async throws -> (Int32, [String]) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CrashTests.binary)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        if let interruptAfter {
            try await Task.sleep(for: interruptAfter)
            kill(process.processIdentifier, SIGINT)
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
        return (process.terminationStatus, lines)
    }

    @Test func sigintPausesAndTheSameCommandResumes() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: CrashTests.binary),
            "\(CrashTests.binary) is missing: run `swift build` before `swift test`"
        )
        let fixture = Fixture()
        defer { fixture.remove() }
        let content = RangeContent.generated(size: 24 << 20, seed: 31)
        // 4 MiB/s on one connection: 6 s for the whole object, so the SIGINT at 1.2 s lands midway.
        try await Fixture.withServer(content: content, faults: [.throttle(bytesPerSecond: 4 << 20)]) { server in
            let arguments = [
                "get", server.url() + "?X-Signature=secret", "-o", fixture.path("out.bin"), "--json", "--segments", "1",
            ]
            let (paused, pausedLines) = try await Self.run(arguments, interruptAfter: .milliseconds(1200))
            #expect(paused == 130)
            try await server.waitUntilIdle()
            let last = try #require(pausedLines.last)
            #expect(last.contains("\"state\":\"paused\""))
            #expect(!pausedLines.joined().contains("secret"))

            server.setFaults([])
            let (done, lines) = try await Self.run(arguments + ["--print-sha256"])
            #expect(done == 0)
            let final = try #require(lines.last)
            #expect(final.contains("\"state\":\"completed\""))
            #expect(final.contains("\"sha256\":\"\(content.sha256Hex())\""))
            #expect(final.contains("\"bytes_fetched\":"))
            #expect(Fixture.sha256(file: fixture.path("out.bin")) == content.sha256Hex())

            let (exists, _) = try await Self.run(arguments)
            #expect(exists == 73)
        }
    }
}
