import ArgumentParser
import Foundation
import Logging

/// The entry point: bootstraps logging (only the executable does), then runs the command.
/// `METERWISE_LOG=debug|info|warning|error` sets the level; commands log warnings and worse by default.
@main
enum Main {
    static func main() async {
        ProcessMemory.tuneAllocator()
        let level =
            ProcessInfo.processInfo.environment["METERWISE_LOG"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
        let journal = JournalLogHandler.stderrIsJournal()
        LoggingSystem.bootstrap { label in
            if journal {
                var handler = JournalLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        await Meterwise.main(ZsyncArgument.rewrite(Array(CommandLine.arguments.dropFirst())))
    }
}

/// The `meterwise` command: thin subcommands over the Links, Policy, Transfer and Engine modules.
struct Meterwise: AsyncParsableCommand {
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "meterwise",
        abstract: "A network-aware download engine: downloads pause by themselves on metered links.",
        discussion: """
            Start with `meterwise demo`: the Wi-Fi -> cellular -> Wi-Fi scenario end to end, on simulated \
            links with an embedded HTTP server, no root needed.
            """,
        version: version,
        subcommands: [
            DemoCommand.self,
            LinksCommand.self,
            GetCommand.self,
            CheckCommand.self,
            RunCommand.self,
            PolicyCommand.self,
            DaemonCommand.self,
            AddCommand.self,
            ListCommand.self,
            StatusCommand.self,
            PauseCommand.self,
            ResumeCommand.self,
            CancelCommand.self,
            WatchCommand.self,
            LabCommand.self,
            ServeCommand.self,
        ]
    )
}
