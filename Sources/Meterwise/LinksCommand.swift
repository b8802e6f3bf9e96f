import ArgumentParser
import Foundation
import Links

/// `meterwise links`: what the link monitor sees, once or as it changes.
struct LinksCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "links",
        abstract: "Show network links, default routes and the primary uplink.",
        discussion: """
            Reads the kernel over netlink (libnl), or replays a scenario file with --scenario. \
            With --watch, prints one line per change until interrupted (or the scenario ends).
            """
    )

    @Flag(help: "Print JSON: one document, or with --watch one object per line.")
    var json = false

    @Flag(help: "Keep running and print every change of the snapshot.")
    var watch = false

    @OptionGroup(title: "Links")
    var linkSource: LinkSourceOptions

    func run() async throws {
        let source = try linkSource.source()
        let monitor = source.monitor(clock: source.clock())
        let scenario = linkSource.scenario
        var previous: LinkSnapshot?
        for try await snapshot in monitor.snapshots() {
            if !watch {
                Output.line(json ? SnapshotFormat.json(snapshot) : SnapshotFormat.table(snapshot, scenario: scenario))
                return
            }
            let line =
                json
                ? SnapshotFormat.json(snapshot, at: Date())
                : SnapshotFormat.changeLine(snapshot, previous: previous, at: Date())
            Output.line(line)
            previous = snapshot
        }
    }
}
