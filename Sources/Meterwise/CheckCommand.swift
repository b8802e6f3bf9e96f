import ArgumentParser
import ConfigKit
import Engine
import Foundation
import Links
import MeterwiseClient
import Policy

/// `meterwise check`: may a download of this size and tag run now? For `ExecCondition=` and scripts.
struct CheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Exit 0 when a download may run now under the policy, 1 when it must wait.",
        discussion: """
            Asks the daemon (its live links and budgets) when it runs, else reads this machine's links and \
            the policy directly (budgets count as unused). The reason goes to stderr; --json prints the \
            decision on stdout. Exit 0: may run; 1: must wait; 2: a bad value or a policy error. Made for \
            systemd's ExecCondition= (docs/integrations.md).
            """)

    @OptionGroup var question: DownloadQuestion

    @Flag(help: "Print the decision as JSON on stdout: action, rule, reasons, allowed_links, next_change, source.")
    var json = false

    @Flag(help: "Do not ask the daemon: read the links and the policy here.")
    var local = false

    @Flag(
        help: ArgumentHelp(
            "Keep answering: one line on stdout each time the answer changes (JSON with --json), until interrupted.",
            discussion:
                "From the daemon's event stream (GET /v1/events?tags=...): for a long-running program that pauses "
                + "itself; exits 2 when the daemon goes away (its stream ends, or brings no keep-alive for three intervals). "
                + "With --local, from the links read here, until they end (a scenario's end: exit 0)."))
    var watch = false

    @Option(
        help:
            "The daemon's control socket to ask (default: $METERWISE_SOCKET, else your own daemon's when it runs, else the system's)."
    )
    var socket: String?

    @Option(help: ArgumentHelp(PolicyOption.help + " Used when no daemon answers."))
    var policy: String?

    @OptionGroup(title: "Links, when deciding here (any of these decides here, as --local does)")
    var linkSource: LinkSourceOptions

    /// Whether to decide here rather than ask the daemon.
    var decidesHere: Bool { local || linkSource.isGiven }

    func run() async throws {
        guard let job = question.job(id: "check") else { throw failure(question.sizeProblem) }
        if watch && decidesHere { try await followHere(job) }
        if watch { try await follow(job) }
        let answer = decidesHere ? nil : try await askDaemon(job)
        let decided: ControlAPI.DecisionBody
        if let answer {
            decided = answer
        } else {
            decided = try await decideHere(job)
        }
        report(decided)
        if !decided.mayRun { throw ExitCode(1) }
    }

    /// The daemon's answer; nil when no daemon is there to ask. A daemon that refuses the question is an error.
    func askDaemon(_ job: JobInfo) async throws -> ControlAPI.DecisionBody? {
        let client = ControlClient(socketPath: socket ?? StatePaths.clientSocket)
        let (status, data): (Int, Data)
        do {
            (status, data) = try await client.request(.GET, "/v1/decision?" + DownloadQuestion.query(job))
        } catch {
            // No daemon: decide here, unless the user named the socket to ask.
            if socket != nil { throw failure("\(error)") }
            return nil
        }
        guard (200..<300).contains(status),
            let body = try? ControlAPI.decoder().decode(ControlAPI.DecisionBody.self, from: data)
        else {
            let message =
                (try? ControlAPI.decoder().decode(ControlAPI.ErrorBody.self, from: data))?.error
                ?? String(decoding: data.prefix(500), as: UTF8.self)
            throw failure("the daemon refused the question: \(message)")
        }
        return body
    }

    /// `--watch`: the daemon's answer, then every change, until the daemon goes away (exit 2) or SIGINT.
    func follow(_ job: JobInfo) async throws -> Never {
        let client = ControlClient(socketPath: socket ?? StatePaths.clientSocket)
        do {
            try await client.events(query: DownloadQuestion.query(job)) { event in
                guard let answer = ControlAPI.DecisionBody(decisionEvent: event) else { return }
                show(answer, at: event.at)
            }
        } catch {
            throw failure("--watch: \(error)")
        }
        throw failure("--watch: the daemon closed the event stream (stopped or restarted)")
    }

    /// `--watch --local`: the decision loop over the links read here, one line per change, until they end.
    func followHere(_ job: JobInfo) async throws -> Never {
        let (policySet, links) = try linkSource.localInputs(policy: policy, failure: failure)
        let clock = links.clock()
        let loop = DecisionLoop(clock: clock)
        do {
            try await loop.run(
                job: job, inputs: DecisionInputs(policy: policySet), triggers: links.monitor(clock: clock).snapshots(),
                as: { .links($0) }
            ) { decision in
                show(ControlAPI.DecisionBody(decision, source: "local"), at: loop.now)
            }
        } catch {
            throw failure("cannot read this machine's links: \(error)")
        }
        throw ExitCode.success
    }

    /// One line of `--watch`: the answer as JSON, or the time and the answer in words.
    func show(_ answer: ControlAPI.DecisionBody, at date: Date) {
        if json, let data = try? ControlAPI.encoder().encode(answer) {
            Output.line(ShownText.json(String(decoding: data, as: UTF8.self)))
        } else {
            Output.line(ISO8601DateFormatter().string(from: date) + " " + describe(answer))
        }
    }

    /// The policy's answer over this machine's links now (or a scenario's first step).
    func decideHere(_ job: JobInfo) async throws -> ControlAPI.DecisionBody {
        let (policySet, links) = try linkSource.localInputs(policy: policy, failure: failure)
        let snapshot: LinkSnapshot
        do {
            snapshot = try await links.current()
        } catch {
            throw failure("cannot read this machine's links: \(error)")
        }
        let decision = policySet.decide(job: job, snapshot: snapshot, usage: Usage(), now: Date(), timeZone: .current)
        return ControlAPI.DecisionBody(decision, source: "local")
    }

    func report(_ answer: ControlAPI.DecisionBody) {
        if json, let data = try? ControlAPI.encoder().encode(answer) {
            Output.line(ShownText.json(String(decoding: data, as: UTF8.self)))
        }
        FileHandle.standardError.write(Data(("meterwise check: " + describe(answer) + "\n").utf8))
    }

    /// "may download now (rule ...: reasons)" or "must wait (...)", and when the answer can change.
    func describe(_ answer: ControlAPI.DecisionBody) -> String {
        let rule = answer.rule.map { "rule \($0)" } ?? "the policy's default"
        let why = answer.reasons.isEmpty ? "" : ": " + answer.reasons.joined(separator: "; ")
        var text = ShownText.escaped(answer.mayRun ? "may download now (\(rule)\(why))" : "must wait (\(rule)\(why))")
        if !answer.mayRun, !answer.isPause, answer.allowedLinks.isEmpty {
            text = "must wait (\(rule): no allowed link is up)"
        }
        if let next = answer.nextChange {
            text += "; the answer can change at \(ISO8601DateFormatter().string(from: next))"
        }
        return text
    }

    /// A bad value or a policy error: says so, and exits 2.
    func failure(_ message: String) -> ExitCode {
        FileHandle.standardError.write(Data(("meterwise check: " + message + "\n").utf8))
        return ExitCode(2)
    }
}
