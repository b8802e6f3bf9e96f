import Foundation
import Subprocess
import Synchronization

/// A child process of the lab (the server, the engine) whose stdout arrives as timestamped lines and
/// whose stderr is kept for error messages.
///
/// Children run through swift-subprocess, which starts them with the default signal mask and
/// dispositions, so SIGTERM reaches them whatever the spawning thread blocks. A child lives only inside
/// `ChildProcess.run`'s body: when the body returns or throws (or its task is cancelled), the child is
/// stopped — given 2 s to exit by itself if it already closed its stdout, then SIGTERM, then SIGKILL.
public final class ChildProcess: Sendable {
    /// One line of the child's stdout and when the lab read it.
    public struct Line: Sendable {
        public var at: ContinuousClock.Instant
        public var text: String
    }

    /// The child's stdout, line by line; finishes when the child closes it.
    public let lines: AsyncStream<Line>
    /// The argv, for messages.
    public let argv: [String]
    /// The process id (after `ip netns exec`, the program's own: `ip` execs it).
    public let pid: Int32
    private let sink: AsyncStream<Line>.Continuation
    private let signal: @Sendable (Int32) -> Void
    private let state = Mutex(State())

    struct State {
        var errors = ""
        var output: [Line] = []
        var outputEnded = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    init(argv: [String], pid: Int32, signal: @escaping @Sendable (Int32) -> Void) {
        self.argv = argv
        self.pid = pid
        self.signal = signal
        (lines, sink) = AsyncStream.makeStream(of: Line.self)
    }

    /// Starts `argv` (`argv[0]` an absolute path or a name on PATH), runs `body` with it, stops it, and
    /// returns the body's value and the child's exit status (a signal's number when a signal ended it).
    public static func run<Value: Sendable>(
        _ argv: [String], _ body: (ChildProcess) async throws -> Value
    ) async throws -> (value: Value, status: Int32) {
        let result: ExecutionResult<Value, SequenceOutput, SequenceOutput>
        do {
            result = try await Subprocess.run(
                .name("env"), arguments: Arguments(argv), input: .none, output: .sequence, error: .sequence
            ) { execution in
                let child = ChildProcess(argv: argv, pid: execution.processIdentifier.value) { number in
                    try? execution.send(signal: Signal(rawValue: number))
                }
                return try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await child.read(stdout: execution.standardOutput) }
                    group.addTask { try await child.read(stderr: execution.standardError) }
                    let value: Value
                    do {
                        value = try await body(child)
                    } catch {
                        await execution.teardown(using: child.stopSteps)
                        throw error
                    }
                    await execution.teardown(using: child.stopSteps)
                    try await group.waitForAll()
                    return value
                }
            }
        } catch let error as SubprocessError {
            throw LabError(.childFailed, "cannot run `\(argv.joined(separator: " "))`: \(error)")
        }
        let status: Int32
        switch result.terminationStatus {
        case .exited(let code): status = code
        case .signaled(let number): status = number
        }
        return (result.takeClosureResult(), status)
    }

    /// How to stop the child when the body is done: a child that closed its stdout is finishing, so it
    /// gets 2 s to exit by itself (signal 0 only probes); then SIGTERM, 2 s, SIGKILL.
    var stopSteps: [TeardownStep] {
        var steps: [TeardownStep] = []
        if state.withLock({ $0.outputEnded }) {
            steps.append(.send(signal: Signal(rawValue: 0), allowedDurationToNextStep: .seconds(2)))
        }
        steps.append(.send(signal: .terminate, allowedDurationToNextStep: .seconds(2)))
        return steps
    }

    func read(stdout: SubprocessOutputSequence) async throws {
        defer {
            sink.finish()
            let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.outputEnded = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
        for try await text in stdout.strings(bufferingPolicy: .unbounded) {
            let line = Line(at: .now, text: text)
            state.withLock { $0.output.append(line) }
            sink.yield(line)
        }
    }

    func read(stderr: SubprocessOutputSequence) async throws {
        for try await text in stderr.strings(bufferingPolicy: .unbounded) {
            state.withLock { $0.errors += text + "\n" }
        }
    }

    /// Everything the child wrote to stderr so far.
    public var stderrText: String { state.withLock { $0.errors } }

    /// Every stdout line so far (complete once `outputEnded` returned).
    public var stdoutLines: [Line] { state.withLock { $0.output } }

    /// Sends SIGTERM (the servers and the engine stop cleanly on it).
    public func terminate() { signal(SIGTERM) }

    /// Sends SIGKILL.
    public func kill() { signal(SIGKILL) }

    /// Waits until the child closes its stdout (it is exiting), or until the waiting task is cancelled.
    public func outputEnded() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let done = state.withLock { state in
                    if state.outputEnded || Task.isCancelled { return true }
                    state.waiters.append(continuation)
                    return false
                }
                if done { continuation.resume() }
            }
        } onCancel: {
            let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }
}
