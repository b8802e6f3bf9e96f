import Foundation
import Synchronization

/// A child process of the lab (the server, the engine, curl) whose stdout arrives as timestamped
/// lines and whose stderr is kept for error messages.
///
/// `@unchecked Sendable`: `Process` is not `Sendable`; it is only configured in `init` and afterwards
/// only signalled (`terminate`, thread-safe) and its pid read. Everything else lives in `Mutex`es.
public final class ChildProcess: @unchecked Sendable {
    /// One line of the child's stdout and when the lab read it.
    public struct Line: Sendable {
        public var at: ContinuousClock.Instant
        public var text: String
    }

    /// The child's stdout, line by line; finishes when the child closes it.
    public let lines: AsyncStream<Line>
    /// The argv, for messages.
    public let argv: [String]
    private let process: Process
    private let shared = Shared()

    /// What the reader threads and the termination handler write; shared by reference.
    final class Shared: Sendable {
        let errors = Mutex(Data())
        let output = Mutex<[Line]>([])
        let exit = Mutex(ExitState())
    }

    struct ExitState {
        var status: Int32?
        var stdoutClosed = false
        var waiters: [CheckedContinuation<Int32, Never>] = []
        /// The status once the child exited and closed stdout.
        var finished: Int32? { stdoutClosed ? status : nil }

        /// Records an event; returns the waiters to resume when the child is now finished.
        mutating func update(_ change: (inout ExitState) -> Void) -> (Int32, [CheckedContinuation<Int32, Never>])? {
            change(&self)
            guard let finished else { return nil }
            defer { waiters = [] }
            return (finished, waiters)
        }
    }

    /// Starts `argv` (`argv[0]` an absolute path or a name on PATH).
    public init(_ argv: [String]) throws(LabError) {
        self.argv = argv
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = argv
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        self.process = process
        let (lines, continuation) = AsyncStream.makeStream(of: Line.self)
        self.lines = lines
        let shared = self.shared
        process.terminationHandler = { finished in
            let status = finished.terminationStatus
            let done = shared.exit.withLock { $0.update { $0.status = status } }
            if let (status, waiters) = done { for waiter in waiters { waiter.resume(returning: status) } }
        }
        do {
            try process.run()
        } catch {
            throw LabError(.childFailed, "cannot start `\(argv.joined(separator: " "))`: \(error)")
        }
        let outHandle = out.fileHandleForReading, errHandle = err.fileHandleForReading
        Thread.detachNewThread {
            func emit(_ line: Line) {
                shared.output.withLock { $0.append(line) }
                continuation.yield(line)
            }
            var pending = Data()
            while true {
                let chunk = outHandle.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: 0x0A) {
                    let text = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending = Data(pending[(newline + 1)...])
                    emit(Line(at: .now, text: text))
                }
            }
            if !pending.isEmpty { emit(Line(at: .now, text: String(decoding: pending, as: UTF8.self))) }
            continuation.finish()
            let done = shared.exit.withLock { $0.update { $0.stdoutClosed = true } }
            if let (status, waiters) = done { for waiter in waiters { waiter.resume(returning: status) } }
        }
        Thread.detachNewThread {
            while true {
                let chunk = errHandle.availableData
                if chunk.isEmpty { break }
                shared.errors.withLock { $0.append(chunk) }
            }
        }
    }

    /// The process id (after `ip netns exec`, the program's own: `ip` execs it).
    public var pid: Int32 { process.processIdentifier }

    /// Everything the child wrote to stderr so far.
    public var stderrText: String { shared.errors.withLock { String(decoding: $0, as: UTF8.self) } }

    /// The exit status once the child has exited (a signal's number when it was killed by one).
    public var exitStatus: Int32? { shared.exit.withLock { $0.status } }

    /// Every stdout line so far (complete once `waitForExit` returned).
    public var stdoutLines: [Line] { shared.output.withLock { $0 } }

    /// Sends SIGTERM (the servers and the engine stop cleanly on it).
    public func terminate() {
        if exitStatus == nil { Foundation.kill(pid, SIGTERM) }
    }

    /// Sends SIGKILL.
    public func kill() {
        if exitStatus == nil { Foundation.kill(pid, SIGKILL) }
    }

    /// Waits for the child to exit and close its stdout, and returns its status. When the waiting task
    /// is cancelled, the child gets SIGTERM and the wait goes on until it exits.
    public func waitForExit() async -> Int32 {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let status: Int32? = shared.exit.withLock { state in
                    if let status = state.finished { return status }
                    state.waiters.append(continuation)
                    return nil
                }
                if let status { continuation.resume(returning: status) }
            }
        } onCancel: {
            terminate()
            // A child can inherit a blocked SIGTERM from the thread that spawned it (Foundation's
            // Process keeps the signal mask): make sure it ends anyway.
            let child = self
            DispatchQueue.global().asyncAfter(deadline: .now() + 2) { child.kill() }
        }
    }

    /// Stops the child: SIGTERM, then SIGKILL when it has not exited within `timeout`. Blocks the
    /// calling thread (at most `timeout` plus one second), so it is usable in `defer` and after
    /// cancellation.
    public func stop(within timeout: Duration = .seconds(2)) {
        terminate()
        let deadline = ContinuousClock.now + timeout
        while exitStatus == nil, ContinuousClock.now < deadline { usleep(10_000) }
        kill()
        let last = ContinuousClock.now + .seconds(1)
        while exitStatus == nil, ContinuousClock.now < last { usleep(10_000) }
    }
}
