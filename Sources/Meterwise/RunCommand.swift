import ArgumentParser
import ConfigKit
import Foundation
import Links
import MeterwiseClient
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
            When the daemon runs, its answer is followed (its live links, budgets and policy: the event \
            stream's decision events) and the bytes the command reads are counted against the policy's \
            budgets, from /proc/PID/io (rchar of every process in the command's group, reported every 2 s). \
            Without a daemon (or with --local) the links come from the kernel (and NetworkManager when it \
            runs), event-driven, and budgets count as unused. SIGINT and SIGTERM are passed to the \
            command. Exit status: the command's; 2 on a bad value, a policy error, or a named --socket \
            that does not answer.
            """)

    @OptionGroup var question: DownloadQuestion

    @Flag(help: "On a pause, terminate the command (SIGTERM) and run it again when allowed, instead of SIGSTOP/SIGCONT.")
    var restart = false

    @Flag(help: "Do not ask the daemon: read the links and the policy here (nothing is counted against budgets).")
    var local = false

    @Option(help: "The daemon's control socket (default: $METERWISE_SOCKET, else your own daemon's when it runs, else the system's).")
    var socket: String?

    @Option(help: ArgumentHelp(PolicyOption.help + " Used without a daemon."))
    var policy: String?

    @Argument(parsing: .postTerminator, help: "The command and its arguments, after --.")
    var command: [String] = []

    /// How often the bytes the command read are reported to the daemon while it runs.
    static let reportInterval = Duration.seconds(2)

    func validate() throws {
        guard !command.isEmpty else { throw ValidationError("give the command after --, e.g. meterwise run -- curl -C - -O URL") }
    }

    func run() async throws {
        guard let job = question.job(id: "run") else { throw failure(question.sizeProblem) }
        if !local, let daemon = try await daemonClient(for: job) {
            throw ExitCode(try await supervise(job: job, source: .daemon(daemon)))
        }
        let source = PolicyLocator.current(explicit: policy)
        let policySet: PolicySet
        do {
            policySet = try source.load()
        } catch {
            throw failure(error.description)
        }
        throw ExitCode(try await supervise(job: job, source: .local(policySet)))
    }

    /// The daemon to follow, when one answers; a named socket that does not is an error.
    func daemonClient(for job: JobInfo) async throws -> ControlClient? {
        let client = ControlClient(socketPath: socket ?? StatePaths.clientSocket)
        do {
            _ = try await client.call(.GET, "/v1/decision?" + DownloadQuestion.query(job), as: ControlAPI.DecisionBody.self)
            return client
        } catch let error as ClientError where error.status != 0 {
            throw failure("the daemon refused the question: \(error)")
        } catch {
            if socket != nil { throw failure("\(error)") }
            return nil
        }
    }

    enum Source {
        /// The daemon's answers, and budgets counted there.
        case daemon(ControlClient)
        /// This machine's links and the policy read here.
        case local(PolicySet)
    }

    /// Follows the answers and drives the child until it exits.
    func supervise(job: JobInfo, source: Source) async throws -> Int32 {
        let (wakes, wake) = AsyncStream.makeStream(of: Wake.self, bufferingPolicy: .unbounded)
        let signals = SignalStream(signals: [SIGINT, SIGTERM])
        defer { signals.stop() }
        let signalNumbers = signals.stream
        var child = ChildGroup(command: command, restartOnPause: restart)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await number in signalNumbers { wake.yield(.signal(number)) }
            }
            switch source {
            case .local:
                let monitor = LinkSource.kernel(hints: .networkmanager)
                group.addTask {
                    for try await snapshot in monitor.snapshots() { wake.yield(.links(snapshot)) }
                }
            case .daemon(let client):
                let query = DownloadQuestion.query(job)
                group.addTask {
                    do {
                        try await client.events(query: query) { event in
                            guard event.event == "decision", event.job == nil, let action = event.action else { return }
                            wake.yield(.answer(Answer(action: action, rule: event.rule, reason: event.reason,
                                                      allowedLinks: event.allowedLinks ?? [])))
                        }
                        wake.yield(.daemonGone("the daemon closed its event stream"))
                    } catch {
                        wake.yield(.daemonGone("\(error)"))
                    }
                }
                group.addTask {
                    while !Task.isCancelled {
                        try await Task.sleep(for: Self.reportInterval)
                        wake.yield(.count)
                    }
                }
            }
            var snapshot: LinkSnapshot?
            var timer: Task<Void, Never>?
            var io: ProcessGroupIO?
            defer { timer?.cancel(); group.cancelAll() }

            /// Reports what the command read since the last report; the daemon answers for the question.
            func count() async -> Answer? {
                guard case .daemon(let client) = source, child.pid != 0 else { return nil }
                if io?.group != child.pid { io = ProcessGroupIO(group: child.pid) }
                guard let bytes = io?.newBytes(), bytes > 0,
                      let body = try? ControlAPI.encoder().encode(ControlAPI.UsageBody(bytes: bytes)),
                      let (answer, _) = try? await client.call(.POST, "/v1/usage?" + DownloadQuestion.query(job), body: body,
                                                               as: ControlAPI.DecisionBody.self)
                else { return nil }
                return Answer(action: answer.action, rule: answer.rule, reason: answer.reasons.first,
                              allowedLinks: answer.allowedLinks)
            }

            for await event in wakes {
                var answer: Answer?
                switch event {
                case .links(let next):
                    snapshot = next
                case .time:
                    break
                case .answer(let next):
                    answer = next
                case .count:
                    guard let counted = await count() else { continue }
                    answer = counted
                case .daemonGone(let why):
                    // The child keeps its state; the answer is no longer followed.
                    note("stopped following the daemon (\(why)); the command is left as it is")
                    continue
                case .reap:
                    _ = await count()
                    if let status = child.reap() { return status }
                    continue
                case .signal(let number):
                    child.forward(number)
                    if !child.started { return 128 + number }
                    continue
                }
                if answer == nil, case .local(let policy) = source, let snapshot {
                    let decision = policy.decide(job: job, snapshot: snapshot, usage: Usage(), now: Date(), timeZone: .current)
                    answer = Answer(action: decision.action.rawValue, rule: decision.rule, reason: decision.reasons.first,
                                    allowedLinks: decision.allowedLinks)
                    timer?.cancel()
                    if let next = decision.nextChange {
                        timer = Task {
                            try? await Task.sleep(for: .seconds(max(0, next.timeIntervalSinceNow)))
                            if !Task.isCancelled { wake.yield(.time) }
                        }
                    }
                }
                guard let answer else { continue }
                if answer.allowed {
                    if let message = try child.allow(onExit: { wake.yield(.reap) }) { note(message + " (\(answer.why))") }
                } else if let message = child.hold() {
                    note(message + " (\(answer.why))")
                }
            }
            return child.reap() ?? 1
        }
    }

    /// What the policy says, from the daemon or decided here.
    struct Answer: Sendable {
        var action: String
        var rule: String?
        var reason: String?
        var allowedLinks: [String]

        var allowed: Bool { action != "pause" && !allowedLinks.isEmpty }
        var why: String { (rule.map { "rule \($0)" } ?? "the default") + (reason.map { ": \($0)" } ?? "") }
    }

    enum Wake: Sendable {
        case links(LinkSnapshot)
        case answer(Answer)
        case time
        case count
        case daemonGone(String)
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
