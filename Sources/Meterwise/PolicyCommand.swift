import ArgumentParser

// Stub until the policy issue lands; replaced by the real command.
struct PolicyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "policy", abstract: "Check and explain policies.")
    func run() async throws { throw ValidationError("meterwise policy is not built yet") }
}
