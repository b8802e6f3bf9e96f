import ArgumentParser
import ConfigKit
import Foundation
import Links
import Policy
#if canImport(Glibc)
import Glibc
#endif

/// `meterwise run -- COMMAND ARGS...`: any download tool under the policy. The command starts when the
/// policy allows a download of that size and tags, is stopped (SIGSTOP to its process group) the moment it
/// says pause, and continued (SIGCONT) when it allows again; `--restart` terminates it instead and runs it
/// again (for tools that resume, like `curl -C -` or `wget -c`). Exit status: the command's.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a download command under the policy: started when allowed, stopped and continued as the links change.",
        discussion: """
            Links come from the kernel (and NetworkManager when it runs), event-driven; the policy from \
            --policy or the usual places; budgets count as unused (the bytes the command moves are not \
            counted yet). SIGINT and SIGTERM are passed to the command. Exit status: the command's; 2 on a \
            bad value or a policy error.
            """)

    @OptionGroup var question: DownloadQuestion

    @Flag(help: "On a pause, terminate the command (SIGTERM) and run it again when allowed, instead of SIGSTOP/SIGCONT.")
    var restart = false

    @Option(help: ArgumentHelp(PolicyOption.help))
    var policy: String?

    @Argument(parsing: .postTerminator, help: "The command and its arguments, after --.")
    var command: [String] = []

    func validate() throws {
        guard !command.isEmpty else { throw ValidationError("give the command after --, e.g. meterwise run -- curl -C - -O URL") }
    }

    func run() async throws {
        guard let job = question.job(id: "run") else { throw failure(question.sizeProblem) }
        let source = PolicyLocator.current(explicit: policy)
        let policySet: PolicySet
        do {
            policySet = try source.load()
        } catch {
            throw failure(error.description)
        }
        let status = try await supervise(job: job, policy: policySet)
        throw ExitCode(status)
    }

    /// Decides on every link snapshot (and when the answer can change by time alone) and drives the child.
    func supervise(job: JobInfo, policy: PolicySet) async throws -> Int32 {
        let (wakes, wake) = AsyncStream.makeStream(of: Wake.self, bufferingPolicy: .unbounded)
        let monitor = LinkSource.kernel(hints: .networkmanager)
        let signals = SignalStream(signals: [SIGINT, SIGTERM])
        defer { signals.stop() }
        let signalNumbers = signals.stream
        var child = ChildGroup(command: command, restartOnPause: restart)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for try await snapshot in monitor.snapshots() { wake.yield(.links(snapshot)) }
            }
            group.addTask {
                for await number in signalNumbers { wake.yield(.signal(number)) }
            }
            var snapshot: LinkSnapshot?
            var timer: Task<Void, Never>?
            defer { timer?.cancel(); group.cancelAll() }
            for await event in wakes {
                switch event {
                case .links(let next): snapshot = next
                case .time: break
                case .reap:
                    if let status = child.reap() { return status }
                    continue
                case .signal(let number):
                    child.forward(number)
                    if !child.started { return 128 + number }
                    continue
                }
                guard let snapshot else { continue }
                let decision = policy.decide(job: job, snapshot: snapshot, usage: Usage(), now: Date(), timeZone: .current)
                let allowed = decision.action != .pause && !decision.allowedLinks.isEmpty
                let why = (decision.rule.map { "rule \($0)" } ?? "the default") + (decision.reasons.first.map { ": \($0)" } ?? "")
                if allowed {
                    if let message = try child.allow(onExit: { wake.yield(.reap) }) { note(message + " (\(why))") }
                } else if let message = child.hold() {
                    note(message + " (\(why))")
                }
                timer?.cancel()
                if let next = decision.nextChange {
                    timer = Task {
                        try? await Task.sleep(for: .seconds(max(0, next.timeIntervalSinceNow)))
                        if !Task.isCancelled { wake.yield(.time) }
                    }
                }
            }
            return child.reap() ?? 1
        }
    }

    enum Wake: Sendable {
        case links(LinkSnapshot)
        case time
        case reap
        case signal(Int32)
    }

    func note(_ text: String) {
        FileHandle.standardError.write(Data(("meterwise run: " + text + "\n").utf8))
    }

    func failure(_ message: String) -> ExitCode {
        note(message)
        return ExitCode(2)
    }
}

/// The command's process group: started, stopped, continued, terminated; its exit status collected.
struct ChildGroup {
    let command: [String]
    let restartOnPause: Bool
    private(set) var pid: pid_t = 0
    private(set) var started = false
    private(set) var stopped = false
    private var waitThread: Thread?

    init(command: [String], restartOnPause: Bool) {
        self.command = command
        self.restartOnPause = restartOnPause
    }

    /// The policy allows: start the command, or continue it. Returns what happened, if anything.
    mutating func allow(onExit: @escaping @Sendable () -> Void) throws -> String? {
        if pid == 0 {
            pid = try Self.spawn(command)
            started = true
            let child = pid
            // One thread blocks in waitid(WNOWAIT) for the exit, so the status stays to be reaped here.
            let thread = Thread {
                var info = siginfo_t()
                while waitid(P_PID, id_t(child), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR {}
                onExit()
            }
            thread.start()
            waitThread = thread
            return "started \(command[0]) (pid \(pid))"
        }
        if stopped {
            stopped = false
            kill(-pid, SIGCONT)
            return "continued \(command[0])"
        }
        return nil
    }

    /// The policy pauses: stop the command's group (or terminate it for a restart).
    mutating func hold() -> String? {
        guard pid != 0, !stopped else { return nil }
        if restartOnPause {
            kill(-pid, SIGTERM)
            kill(-pid, SIGCONT)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            pid = 0
            return "terminated \(command[0]) to run it again when allowed"
        }
        kill(-pid, SIGSTOP)
        stopped = true
        return "stopped \(command[0]) (SIGSTOP)"
    }

    /// Passes SIGINT/SIGTERM on, continuing a stopped group so it can act on it.
    func forward(_ signal: Int32) {
        guard pid != 0 else { return }
        kill(-pid, signal)
        if stopped { kill(-pid, SIGCONT) }
    }

    /// The command's exit status once it has exited (128 + signal when a signal ended it).
    func reap() -> Int32? {
        guard pid != 0 else { return nil }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    /// posix_spawnp in a new process group (so SIGSTOP reaches the whole tool, children included).
    static func spawn(_ command: [String]) throws -> pid_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        posix_spawnattr_setpgroup(&attributes, 0)
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in [SIGINT, SIGTERM, SIGHUP, SIGPIPE] { sigaddset(&defaults, number) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, command[0], nil, &attributes, &argv, environ)
        guard result == 0 else {
            throw ValidationError("cannot run \(command[0]): \(String(cString: strerror(result)))")
        }
        return pid
    }
}
