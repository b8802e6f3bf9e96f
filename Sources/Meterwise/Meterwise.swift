import ArgumentParser

/// The `meterwise` command: thin subcommands over the Links, Policy, Transfer and Engine modules.
@main
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
            LinksCommand.self,
            GetCommand.self,
            PolicyCommand.self,
            LabCommand.self,
            ServeCommand.self,
        ]
    )
}
