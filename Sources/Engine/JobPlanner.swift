import Links
import Policy

/// What the engine should do with one job now: a pure function of the decision, the links and the
/// job's runtime facts. The engine only carries the action out.
public enum JobAction: Sendable, Hashable {
    /// Start (or resume) a transfer over `link`; bind to `localAddress` when it is not the primary.
    case start(link: String, localAddress: String?, rate: Int64?)
    /// Stop the running transfer now (pausing is immediate).
    case pause(reason: String)
    /// Keep running with a new rate limit.
    case adjust(rate: Int64?)
    /// Allowed to run, but the links have not been stable for `resume_after` yet.
    case wait(remaining: Duration)
    /// Nothing to change.
    case none
}

/// The inputs of `JobPlanner.plan`.
public struct PlannerInput: Sendable {
    public var decision: Decision
    public var snapshot: LinkSnapshot
    /// A transfer is running (and not being stopped).
    public var running: Bool
    /// The link the running transfer is bound to; nil when it follows the default route (the primary).
    public var boundLink: String?
    public var currentRate: Int64?
    /// The policy stopped this job before: resuming waits for `resumeAfter` of stable links.
    public var pausedByPolicy: Bool
    /// Time since the last change of the link snapshot.
    public var stableFor: Duration
    public var resumeAfter: Duration
    /// Whether connections may be bound to a source address (real links); in simulation they are not.
    public var canBind: Bool

    public init(
        decision: Decision, snapshot: LinkSnapshot, running: Bool, boundLink: String? = nil,
        currentRate: Int64? = nil, pausedByPolicy: Bool = false, stableFor: Duration = .seconds(3600),
        resumeAfter: Duration = .seconds(5), canBind: Bool = true
    ) {
        self.decision = decision
        self.snapshot = snapshot
        self.running = running
        self.boundLink = boundLink
        self.currentRate = currentRate
        self.pausedByPolicy = pausedByPolicy
        self.stableFor = stableFor
        self.resumeAfter = resumeAfter
        self.canBind = canBind
    }
}

public enum JobPlanner {
    public static func plan(_ input: PlannerInput) -> JobAction {
        let decision = input.decision
        let usable = decision.allowedLinks.compactMap { input.snapshot.link(named: $0) }.filter(\.isUsable)
        let usableNames = Set(usable.map(\.name))
        let primary = input.snapshot.primary?.name
        let rate = decision.action == .throttle ? decision.rate : nil

        // "May run" is the policy's (`Decision.mayRun`), and over a link that is up now.
        if !decision.mayRun || usable.isEmpty {
            guard input.running else { return .none }
            if decision.action == .pause {
                return .pause(reason: decision.reasons.first ?? "the policy pauses this job")
            }
            return .pause(reason: "no allowed link is up")
        }
        if input.running {
            // Where does the running transfer's traffic go? Its bound link, or the primary.
            let current = input.boundLink ?? primary
            guard let current, usableNames.contains(current) else {
                return .pause(reason: "traffic would use \(current ?? "no link"), which this job may not use now")
            }
            return rate == input.currentRate ? .none : .adjust(rate: rate)
        }
        if input.pausedByPolicy && input.stableFor < input.resumeAfter {
            return .wait(remaining: input.resumeAfter - input.stableFor)
        }
        if let primary, usableNames.contains(primary) {
            return .start(link: primary, localAddress: nil, rate: rate)
        }
        // The primary is not allowed: use an allowed link by binding to its source address.
        guard input.canBind else {
            // Simulation cannot bind: run over the first allowed link and account bytes to it.
            return .start(link: usable[0].name, localAddress: nil, rate: rate)
        }
        for link in usable {
            if let address = link.ipv4.first ?? link.ipv6.first(where: { !$0.lowercased().hasPrefix("fe80") }) {
                return .start(link: link.name, localAddress: stripPrefix(address), rate: rate)
            }
        }
        return .wait(remaining: input.resumeAfter)
    }

    static func stripPrefix(_ cidr: String) -> String {
        String(cidr.split(separator: "/", maxSplits: 1).first ?? Substring(cidr))
    }
}
