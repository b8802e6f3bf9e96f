import ArgumentParser

// Stub until the downloader issue lands; replaced by the real command.
struct GetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "get", abstract: "Download a URL with checkpoints.")
    func run() async throws { throw ValidationError("meterwise get is not built yet") }
}
