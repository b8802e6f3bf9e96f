import ArgumentParser
import BlockingIO
import CFileCalls
import ConfigKit
import Engine
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
        abstract:
            "Run a download command under the policy: started when allowed, stopped and continued as the links change.",
        discussion: """
            When the daemon runs, its answer is followed (its live links, budgets and policy: the event \
            stream's decision events) and the bytes the command receives are counted against the policy's \
            budgets: the kernel's bytes_received of every TCP socket of the command's processes (sock_diag, \
            as ss -ti; reported every 2 s). When the daemon is lost (its stream closes, or no keep-alive \
            comes), the command is stopped until the daemon answers again. Without a daemon (or with --local, or \
            any Links option) the links come from the kernel (with the system's hints) or a scenario \
            (--scenario FILE), event-driven, and budgets count as unused. SIGINT and SIGTERM are passed to the \
            command. Exit status: the command's; 127 when the command is not found, 126 when it cannot be \
            run; 2 on a bad value, a policy error, or a named --socket that does not answer.
            """)

    @OptionGroup var question: DownloadQuestion

    @Flag(
        help: "On a pause, terminate the command (SIGTERM) and run it again when allowed, instead of SIGSTOP/SIGCONT.")
    var restart = false

    @Flag(help: "Do not ask the daemon: read the links and the policy here (nothing is counted against budgets).")
    var local = false

    @Option(
        help:
            "The daemon's control socket (default: $METERWISE_SOCKET, else your own daemon's when it runs, else the system's)."
    )
    var socket: String?

    @Option(help: ArgumentHelp(PolicyOption.help + " Used without a daemon."))
    var policy: String?

    @OptionGroup(title: "Links, when deciding here (any of these decides here, as --local does)")
    var linkSource: LinkSourceOptions

    @Argument(parsing: .postTerminator, help: "The command and its arguments, after --.")
    var command: [String] = []

    /// How often the bytes the command read are reported to the daemon while it runs.
    static let reportInterval = Duration.seconds(2)

    func validate() throws {
        guard !command.isEmpty else {
            throw ValidationError("give the command after --, e.g. meterwise run -- curl -C - -O URL")
        }
    }

    func run() async throws {
        // Read before anything here ignores it (the runtime's sockets do): the command gets it as it was.
        let pipeIgnored = SignalStream.isIgnored(SIGPIPE)
        if let problem = ChildGroup.lookUp(command[0]) {
            note(problem.message)
            throw ExitCode(problem.status)
        }
        guard let job = question.job(id: "run") else { throw failure(question.sizeProblem) }
        if !local && !linkSource.isGiven, let daemon = try await daemonClient(for: job) {
            throw ExitCode(try await supervise(job: job, source: .daemon(daemon), pipeIgnored: pipeIgnored))
        }
        let (policySet, links) = try linkSource.localInputs(policy: policy, failure: failure)
        throw ExitCode(try await supervise(job: job, source: .local(policySet, links), pipeIgnored: pipeIgnored))
    }

    /// The daemon to follow, when one answers; a named socket that does not is an error.
    func daemonClient(for job: JobInfo) async throws -> ControlClient? {
        let client = ControlClient(socketPath: socket ?? StatePaths.clientSocket)
        do {
            _ = try await client.call(
                .GET, "/v1/decision?" + DownloadQuestion.query(job), as: ControlAPI.DecisionBody.self)
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
        /// The links and the policy read here.
        case local(PolicySet, LinkSource)
    }

    /// Follows the answers and drives the child until it exits.
    /// `pipeIgnored`: SIGPIPE was ignored when this process started.
    func supervise(job: JobInfo, source: Source, pipeIgnored: Bool) async throws -> Int32 {
        let (wakes, wake) = AsyncStream.makeStream(of: Wake.self, bufferingPolicy: .unbounded)
        let signals = SignalStream(signals: [SIGINT, SIGTERM])
        defer { signals.stop() }
        let signalNumbers = signals.stream
        // The command starts with the actions it would have without `run` in between: the signals this
        // process listens for, and SIGPIPE unless it was ignored at the start (the runtime ignores it), back
        // to their defaults; a signal it was started with ignored (SIGINT for `cmd &` in a script, SIGHUP under
        // nohup) stays ignored.
        var child = ChildGroup(
            command: command, restartOnPause: restart, defaults: signals.handled + (pipeIgnored ? [] : [SIGPIPE]))
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await number in signalNumbers { wake.yield(.signal(number)) }
            }
            switch source {
            case .local(let policy, let links):
                // The decision loop: links and the policy in, an answer each time it changes (and when time
                // alone changes it).
                group.addTask {
                    let clock = links.clock()
                    do {
                        try await DecisionLoop(clock: clock).run(
                            job: job, inputs: DecisionInputs(policy: policy),
                            triggers: links.monitor(clock: clock).snapshots(),
                            as: { .links($0) }
                        ) { decision in
                            wake.yield(.answer(ControlAPI.DecisionBody(decision, source: "local")))
                        }
                    } catch is CancellationError {
                    } catch {
                        wake.yield(.linksFailed("\(error)"))
                    }
                }
            case .daemon(let client):
                let query = DownloadQuestion.query(job)
                group.addTask {
                    // Followed for as long as the command runs: a lost daemon is asked again, 0.25 s after
                    // the loss, then backing off to 5 s; the command is held meanwhile (below).
                    var delay = Duration.milliseconds(250)
                    while true {
                        do {
                            try await client.events(query: query) { event in
                                guard let answer = ControlAPI.DecisionBody(decisionEvent: event) else { return }
                                delay = .milliseconds(250)
                                wake.yield(.answer(answer))
                            }
                            wake.yield(.daemonGone("the daemon closed its event stream"))
                        } catch {
                            wake.yield(.daemonGone("\(error)"))
                        }
                        try await Task.sleep(for: delay)
                        delay = min(delay * 2, .seconds(5))
                    }
                }
                group.addTask {
                    while true {
                        try await Task.sleep(for: Self.reportInterval)
                        wake.yield(.count)
                    }
                }
                group.addTask {
                    while true {
                        try await Task.sleep(for: CommandTraffic.lookInterval)
                        wake.yield(.look)
                    }
                }
            }
            var traffic: CommandTraffic?
            /// Bytes counted and not yet taken by the daemon (it may be away for a while).
            var unreported: UInt64 = 0
            var following = true
            /// The process whose exit is watched (a restart starts another).
            var watched: pid_t = 0
            defer { group.cancelAll() }

            /// The command's sockets, following the command across restarts (its old sockets' ends still count).
            func tally() -> CommandTraffic? {
                guard case .daemon = source, child.pid != 0 else { return traffic }
                if let traffic {
                    traffic.group = child.pid
                } else {
                    let made = CommandTraffic(group: child.pid)
                    if let problem = made.problem { note(problem) }
                    traffic = made
                }
                return traffic
            }

            /// Reports what the command received since the last report; the daemon answers for the question.
            func report(_ bytes: UInt64) async -> ControlAPI.DecisionBody? {
                guard case .daemon(let client) = source else { return nil }
                unreported = CommandTraffic.adding(unreported, bytes)
                guard unreported > 0 else { return nil }
                // The API takes up to 2^40 bytes a report; the rest waits for the next one.
                let now = min(unreported, 1 << 40)
                guard let body = try? ControlAPI.encoder().encode(ControlAPI.UsageBody(bytes: Int64(now))),
                    let (answer, _) = try? await client.call(
                        .POST, "/v1/usage?" + DownloadQuestion.query(job), body: body,
                        as: ControlAPI.DecisionBody.self, timeout: Self.reportInterval)
                else { return nil }
                unreported -= now
                return answer
            }

            for await event in wakes {
                let answer: ControlAPI.DecisionBody
                switch event {
                case .answer(let next):
                    if !following { note("the daemon answers again; following it") }
                    following = true
                    answer = next
                case .look:
                    if let traffic = tally() { unreported = CommandTraffic.adding(unreported, traffic.look()) }
                    continue
                case .count:
                    guard let counted = await report(tally()?.count() ?? 0) else { continue }
                    answer = counted
                    if !following {
                        // The daemon answers again; its stream follows (its first event is the answer).
                        continue
                    }
                case .daemonGone(let why):
                    // Never unsupervised: the command is held until the daemon's stream answers again.
                    let held = child.hold()
                    if following || held != nil {
                        note(
                            "lost the daemon (\(why)); "
                                + (held.map { $0 + " until it answers again" }
                                    ?? "the command waits until it answers again"))
                    }
                    following = false
                    continue
                case .reap:
                    if child.pid != 0, let traffic = tally() { _ = await report(await traffic.finish()) }
                    if let status = child.reap() { return status }
                    continue
                case .signal(let number):
                    child.forward(number)
                    if !child.started { return 128 + number }
                    continue
                case .linksFailed(let why):
                    // Never unsupervised: without links nothing says the command may run.
                    note("cannot read this machine's links: \(why)")
                    if !child.started { return 2 }
                    if let message = child.hold() {
                        note(message + ": no links to decide with (SIGINT or SIGTERM ends it)")
                    }
                    continue
                }
                if answer.mayRun {
                    if let message = try child.allow() { note(message + " (\(Self.why(answer)))") }
                    if child.pid != 0, child.pid != watched {
                        watched = child.pid
                        let exit = ChildGroup.exit(of: child.pid)
                        group.addTask {
                            for await _ in exit {}
                            wake.yield(.reap)
                        }
                    }
                } else if let message = child.hold() {
                    note(message + " (\(Self.why(answer)))")
                }
            }
            return child.reap() ?? 1
        }
    }

    /// The rule and the first reason of an answer, for the notes.
    static func why(_ answer: ControlAPI.DecisionBody) -> String {
        (answer.rule.map { "rule \($0)" } ?? "the default") + (answer.reasons.first.map { ": \($0)" } ?? "")
    }

    enum Wake: Sendable {
        case answer(ControlAPI.DecisionBody)
        case linksFailed(String)
        case count
        case look
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

    /// Signals the command starts with at their default actions.
    let defaults: [Int32]

    init(command: [String], restartOnPause: Bool, defaults: [Int32]) {
        self.command = command
        self.restartOnPause = restartOnPause
        self.defaults = defaults
    }

    /// The policy allows: start the command, or continue it. Returns what happened, if anything.
    mutating func allow() throws -> String? {
        if pid == 0 {
            pid = try Self.spawn(command, defaults: defaults)
            started = true
            return "started \(command[0]) (pid \(pid))"
        }
        if stopped {
            stopped = false
            kill(-pid, SIGCONT)
            return "continued \(command[0])"
        }
        return nil
    }

    /// Ends (empty) once `pid` has exited; its status stays to be reaped (`reap()`). A pidfd waited on by a
    /// `PollThread`; before Linux 5.3 (no pidfd) the thread blocks in waitid(WNOWAIT) instead.
    static func exit(of pid: pid_t) -> AsyncStream<Void> {
        let pidfd = mw_pidfd_open(pid)
        return PollThread.stream(named: "mw-run-wait") { waiter in
            guard pidfd >= 0 else {
                var info = siginfo_t()
                while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR {}
                return
            }
            defer { close(pidfd) }
            _ = try? waiter.wait(for: [PollDescriptor(pidfd)])
        }
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
    static func spawn(_ command: [String], defaults signals: [Int32]) throws -> pid_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        posix_spawnattr_setpgroup(&attributes, 0)
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in signals { sigaddset(&defaults, number) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, command[0], nil, &attributes, &argv, environ)
        guard result == 0 else {
            let problem = LaunchProblem(command: command[0], errno: result)
            FileHandle.standardError.write(Data(("meterwise run: " + problem.message + "\n").utf8))
            throw ExitCode(problem.status)
        }
        return pid
    }

    /// Why `command` cannot be run, as a shell would say it (127: not found; 126: found, not runnable);
    /// nil when it can (or when only running it will tell).
    static func lookUp(_ command: String, path: String? = ProcessInfo.processInfo.environment["PATH"]) -> LaunchProblem?
    {
        let candidates: [String]
        if command.contains("/") {
            candidates = [command]
        } else {
            let folders = (path ?? "/usr/local/bin:/usr/bin:/bin").split(
                separator: ":", omittingEmptySubsequences: false)
            candidates = folders.map { ($0.isEmpty ? "." : String($0)) + "/" + command }
        }
        var denied: Int32?
        for candidate in candidates {
            var info = stat()
            guard !command.isEmpty, stat(candidate, &info) == 0 else { continue }
            if info.st_mode & S_IFMT == S_IFDIR {
                denied = denied ?? EISDIR
                continue
            }
            if access(candidate, X_OK) == 0 { return nil }
            denied = EACCES
        }
        return LaunchProblem(command: command, errno: denied ?? ENOENT)
    }
}

/// A command that cannot be started, with the shell's exit status for it.
struct LaunchProblem: Error {
    let command: String
    let errno: Int32

    /// 127 when nothing by that name exists, 126 when it exists and cannot be run (the shell's convention).
    var status: Int32 { errno == ENOENT || errno == ENOTDIR ? 127 : 126 }

    var message: String {
        switch errno {
        case ENOENT, ENOTDIR:
            return command.contains("/")
                ? "\(command): no such file" : "\(command): command not found (looked in $PATH)"
        case EACCES:
            return "\(command): permission denied (not executable: chmod +x, or run it through its interpreter)"
        case EISDIR:
            return "\(command): is a directory"
        default:
            return "\(command): cannot run it: \(String(cString: strerror(errno)))"
        }
    }
}
