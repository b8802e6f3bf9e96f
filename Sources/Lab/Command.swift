import Foundation

/// Runs system commands (`ip`, `tc`) for the lab, capturing their output.
public enum Command {
    /// Runs a program by absolute path or by name on PATH; throws with its stderr when it fails.
    @discardableResult
    /// `input`, when given, is written to the program's stdin (`ip -batch -`).
    public static func run(
        _ arguments: [String], allowFailure: Bool = false,
        input: String? = nil
    ) throws(LabError) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let stdin = input.map { _ in Pipe() }
        if let stdin { process.standardInput = stdin }
        do {
            try process.run()
        } catch {
            throw LabError(.commandFailed, "cannot start `\(arguments.joined(separator: " "))`: \(error)")
        }
        if let stdin, let input {
            stdin.fileHandleForWriting.write(Data(input.utf8))
            try? stdin.fileHandleForWriting.close()
        }
        let output = out.fileHandleForReading.readDataToEndOfFile()
        let errors = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        if process.terminationStatus != 0 && !allowFailure {
            let text = String(decoding: errors, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            throw LabError(
                .commandFailed, "`\(arguments.joined(separator: " "))` failed (\(process.terminationStatus)): \(text)")
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Whether a program is on PATH.
    public static func exists(_ name: String) -> Bool {
        (try? run(["sh", "-c", "command -v \(name)"], allowFailure: false)) != nil
    }
}
