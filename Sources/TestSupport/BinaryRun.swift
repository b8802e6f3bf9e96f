import Foundation
import Synchronization

/// Runs the built `meterwise` binary (or any program) the way a user would, capturing its output.
public struct BinaryRun: Sendable {
    /// The exit code, or the signal number when `signaled`.
    public var status: Int32
    public var stdout: String
    public var stderr: String
    /// The program died of a signal (a trap is SIGILL or SIGTRAP) instead of exiting.
    public var signaled = false

    /// Runs to completion.
    public static func run(
        _ arguments: [String], executable: String = RepoPaths.binary,
        prefix: [String] = []
    ) throws -> BinaryRun {
        let process = Process()
        let argv = prefix + [executable] + arguments
        process.executableURL = URL(fileURLWithPath: argv[0])
        process.arguments = Array(argv.dropFirst())
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let errorReader = Thread.detachNewThreadReader(err)
        let output = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return BinaryRun(
            status: process.terminationStatus, stdout: String(decoding: output, as: UTF8.self),
            stderr: errorReader.text(), signaled: process.terminationReason == .uncaughtSignal)
    }
}

/// A running program whose stdout lines are collected as they arrive, for `--watch` tests.
public final class LineCollector: Sendable {
    public let process: Process
    private let lines = LineStorage()

    public init(_ argv: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: argv[0])
        process.arguments = Array(argv.dropFirst())
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        self.process = process
        let handle = out.fileHandleForReading
        let lines = self.lines
        try process.run()
        let thread = Thread {
            var pending = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: 0x0A) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending = Data(pending[(newline + 1)...])
                    lines.append(line)
                }
            }
        }
        thread.start()
    }

    public var received: [(at: Date, line: String)] { lines.all }

    /// Waits until a line satisfies `predicate` (checked every 2 ms), up to `timeout`.
    public func waitForLine(
        after index: Int = 0, timeout: Duration = .seconds(15),
        _ predicate: (String) -> Bool
    ) async -> (at: Date, line: String)? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let all = received
            if index < all.count, let hit = all[index...].first(where: { predicate($0.line) }) { return hit }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return nil
    }

    public func stop() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }
}

extension Thread {
    /// Reads a pipe to its end on a thread, so a full stderr pipe never blocks the child.
    static func detachNewThreadReader(_ pipe: Pipe) -> PipeText {
        let box = PipeText()
        let handle = pipe.fileHandleForReading
        let thread = Thread {
            let data = handle.readDataToEndOfFile()
            box.set(String(decoding: data, as: UTF8.self))
        }
        thread.start()
        return box
    }
}

final class PipeText: Sendable {
    private let value = Mutex<String?>(nil)
    func set(_ text: String) { value.withLock { $0 = text } }
    func text() -> String {
        for _ in 0..<5000 {
            if let text = value.withLock({ $0 }) { return text }
            usleep(1000)
        }
        return ""
    }
}

final class LineStorage: Sendable {
    private let lines = Mutex<[(at: Date, line: String)]>([])
    func append(_ line: String) { lines.withLock { $0.append((Date(), line)) } }
    var all: [(at: Date, line: String)] { lines.withLock { $0 } }
}
