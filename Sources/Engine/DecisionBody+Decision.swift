import MeterwiseClient
import Policy

extension ControlAPI.DecisionBody {
    /// The wire form of a decision. Its `mayRun` is `decision.mayRun` (the client library mirrors the
    /// policy's rule on the action's string; a test holds the two together).
    public init(_ decision: Decision, source: String) {
        self.init(
            action: decision.action.rawValue, rule: decision.rule, rate: decision.rate, reasons: decision.reasons,
            allowedLinks: decision.allowedLinks, nextChange: decision.nextChange, source: source)
    }
}
