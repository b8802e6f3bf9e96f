import ArgumentParser
import ConfigKit
import Foundation
import RangeServer

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `meterwise serve`: the lab's server in the internet namespace (hidden: a helper, not a user command).
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve a generated file over HTTP with byte ranges until SIGTERM (the lab's server).",
        discussion: """
            Prints one JSON line on stdout once listening: {"url": ..., "sha256": ..., "size": ...}.
            """,
        shouldDisplay: false
    )

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port (0: any free port).")
    var port = 0

    @Option(help: "The size of the generated file, e.g. 64MiB.")
    var size = "64MiB"

    @Option(help: "The seed of the generated content (same seed, same bytes).")
    var seed: UInt64 = 1

    @Option(help: "Send each response at about this rate, e.g. 2MiB/s.")
    var rate: String?

    func validate() throws {
        guard Units.parseBytes(size) != nil else {
            throw ValidationError("--size \(size) is not a size; \(Units.bytesHint).")
        }
        try ArgumentLimits.checkGenerated(Units.parseBytes(size), option: "--size", text: size)
        if let rate, Units.parseRateLimit(rate) == nil {
            throw ValidationError("--rate \(rate) is not a rate; \(Units.rateHint).")
        }
        if !(0...65535).contains(port) { throw ValidationError("--port must be between 0 and 65535.") }
    }

    func run() async throws {
        let content = RangeContent.generated(size: Units.parseBytes(size)!, seed: seed)
        let faults: [RangeFault] = rate.flatMap(Units.parseRateLimit).map { [.throttle(bytesPerSecond: Int($0))] } ?? []
        let signals = SignalStream(signals: [SIGINT, SIGTERM])
        defer { signals.stop() }
        let server = try await RangeServer.start(host: host, port: port, content: content, faults: faults)
        let line: [String: Any] = ["url": server.url(), "sha256": content.sha256Hex(), "size": content.size]
        let data = try JSONSerialization.data(withJSONObject: line, options: [.sortedKeys, .withoutEscapingSlashes])
        Output.line(String(decoding: data, as: UTF8.self))
        for await _ in signals.stream { break }
        try await server.shutdown()
    }
}
