import ArgumentParser

// Filled in by the foundation issue (in progress).
struct LinksCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "links", abstract: "Show network links.")
    func run() async throws {}
}
