import Foundation
import Links
import Testing

@testable import Engine

@Suite struct MetricsTextTests {
    typealias Address = MetricsListener<ContinuousClock>.Address

    @Test func labelValuesAreEscaped() {
        var text = Metrics.Text()
        text.family("m", .gauge, "help")
        text.sample("m", ["link": "a\"b\\c\nd"], 1)
        #expect(text.output == "# HELP m help\n# TYPE m gauge\nm{link=\"a\\\"b\\\\c\\nd\"} 1\n")
    }

    @Test func listenAddresses() throws {
        #expect(try Address(parsing: "9464") == Address(host: "127.0.0.1", port: 9464))
        #expect(try Address(parsing: "0.0.0.0:80") == Address(host: "0.0.0.0", port: 80))
        #expect(try Address(parsing: "[::1]:9464") == Address(host: "::1", port: 9464))
        #expect(try Address(parsing: "[::1]:9464").description == "[::1]:9464")
        #expect(try Address(parsing: "localhost:9464") == Address(host: "localhost", port: 9464))
        for bad in [":9464", "0", "65536", "host:", "[::1]", "[::1]9464", "a b:1", "host:-1", "", "x:9464x"] {
            #expect(throws: EngineError.self, "\(bad)") { try Address(parsing: bad) }
        }
    }

    @Test func textfileIsReplacedWholeAndASymlinkIsNotFollowed() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mwt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("meterwise.prom").path
        let victim = directory.appendingPathComponent("victim").path
        try "keep".write(toFile: victim, atomically: true, encoding: .utf8)
        // A symlink planted where the file goes is replaced, not written through.
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: victim)
        try MetricsTextfile<ContinuousClock>.replace(path, with: Data("m 1\n".utf8))
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "keep")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "m 1\n")
        try MetricsTextfile<ContinuousClock>.replace(path, with: Data("m 2\n".utf8))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "m 2\n")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == [
                "meterwise.prom", "victim",
            ])
        #expect(MetricsTextfile<ContinuousClock>.problem(with: directory.appendingPathComponent("x.txt").path) != nil)
        #expect(MetricsTextfile<ContinuousClock>.problem(with: path) == nil)
    }
}
