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

    @Option(help: "The daemon's control socket to ask (default: $METERWISE_SOCKET, else your own daemon's when it runs, else the system's).")
    var socket: String?

    @Option(help: ArgumentHelp(PolicyOption.help + " Used when no daemon answers."))
    var policy: String?

    func run() async throws {
        guard let job = question.job(id: "check") else { throw failure(question.sizeProblem) }
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
        var query = ["allow_metered=\(job.allowMetered)"]
        if let size = job.size { query.append("size=\(size)") }
        if !job.tags.isEmpty {
            let joined = job.tags.joined(separator: ",")
            query.append("tags=" + (joined.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(.init(charactersIn: ",-_."))) ?? joined))
        }
        let client = ControlClient(socketPath: socket ?? StatePaths.clientSocket)
        let (status, data): (Int, Data)
        do {
            (status, data) = try await client.request(.GET, "/v1/decision?" + query.joined(separator: "&"))
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
            Output.line(String(decoding: data, as: UTF8.self))
        }
        let rule = answer.rule.map { "rule \($0)" } ?? "the policy's default"
        let why = answer.reasons.isEmpty ? "" : ": " + answer.reasons.joined(separator: "; ")
        var text = answer.mayRun ? "may download now (\(rule)\(why))" : "must wait (\(rule)\(why))"
        if !answer.mayRun, answer.action != "pause", answer.allowedLinks.isEmpty {
            text = "must wait (\(rule): no allowed link is up)"
        }
        if let next = answer.nextChange {
            text += "; the answer can change at \(ISO8601DateFormatter().string(from: next))"
        }
        FileHandle.standardError.write(Data(("meterwise check: " + text + "\n").utf8))
    }

    /// A bad value or a policy error: says so, and exits 2.
    func failure(_ message: String) -> ExitCode {
        FileHandle.standardError.write(Data(("meterwise check: " + message + "\n").utf8))
        return ExitCode(2)
    }
}
