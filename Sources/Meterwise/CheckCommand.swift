import ArgumentParser
import ConfigKit
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

    @Flag(help: ArgumentHelp(
        "Keep answering: one line on stdout each time the answer changes (JSON with --json), until interrupted.",
        discussion: "Needs the daemon (its event stream, GET /v1/events?tags=...): for a long-running program that pauses "
            + "itself. Exits 2 when the daemon goes away (its stream ends, or brings no keep-alive for three intervals)."))
    var watch = false

    @Option(help: "The daemon's control socket to ask (default: $METERWISE_SOCKET, else your own daemon's when it runs, else the system's).")
    var socket: String?

    @Option(help: ArgumentHelp(PolicyOption.help + " Used when no daemon answers."))
    var policy: String?

    func validate() throws {
        if watch && local { throw ValidationError("--watch follows the daemon's answer; drop --local") }
    }

    func run() async throws {
        guard let job = question.job(id: "check") else { throw failure(question.sizeProblem) }
        if watch { try await follow(job) }
        let answer = local ? nil : try await askDaemon(job)
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
        guard (200..<300).contains(status), let body = try? ControlAPI.decoder().decode(ControlAPI.DecisionBody.self, from: data)
        else {
            let message = (try? ControlAPI.decoder().decode(ControlAPI.ErrorBody.self, from: data))?.error
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
                guard event.event == "decision", event.job == nil, let action = event.action else { return }
                let answer = ControlAPI.DecisionBody(
                    action: action, rule: event.rule, rate: event.rate, reasons: event.reason.map { [$0] } ?? [],
                    allowedLinks: event.allowedLinks ?? [], nextChange: event.nextChange, source: "daemon")
                if json, let data = try? ControlAPI.encoder().encode(answer) {
                    Output.line(ShownText.json(String(decoding: data, as: UTF8.self)))
                } else {
                    Output.line(ISO8601DateFormatter().string(from: event.at) + " " + describe(answer))
                }
            }
        } catch {
            throw failure("--watch: \(error)")
        }
        throw failure("--watch: the daemon closed the event stream (stopped or restarted)")
    }

    /// The policy's answer over this machine's links now.
    func decideHere(_ job: JobInfo) async throws -> ControlAPI.DecisionBody {
        let source = PolicyLocator.current(explicit: policy)
        let policySet: PolicySet
        do {
            policySet = try source.load()
        } catch {
            throw failure(error.description)
        }
        let snapshot: LinkSnapshot
        do {
            snapshot = try await currentLinkSnapshot()
        } catch {
            throw failure("cannot read this machine's links: \(error)")
        }
        let decision = policySet.decide(job: job, snapshot: snapshot, usage: Usage(), now: Date(), timeZone: .current)
        return ControlAPI.DecisionBody(
            action: decision.action.rawValue, rule: decision.rule, rate: decision.rate, reasons: decision.reasons,
            allowedLinks: decision.allowedLinks, nextChange: decision.nextChange, source: "local")
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
        if !answer.mayRun, answer.action != "pause", answer.allowedLinks.isEmpty {
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
