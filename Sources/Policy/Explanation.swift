import ConfigKit
import Foundation

/// A decision with the story behind it: the link looked at, and for every rule tried before the one
/// that matched, why it did not match. `text` is what `meterwise policy explain` prints; `json()` is its
/// `--json` form.
public struct Explanation: Sendable, Hashable {
    /// A rule that did not match, and every reason why.
    public struct Miss: Sendable, Hashable, Codable {
        public var rule: String
        /// `file:line` of the rule.
        public var origin: String
        public var why: [String]
    }

    public var decision: Decision
    /// The primary uplink the rules looked at, and its class.
    public var link: String?
    public var network: NetworkClass?
    /// The rules before the matched one (all rules when the default applied), in order.
    public var misses: [Miss]
    /// The local instant of the decision, for display (`2026-11-22 02:30 CET`).
    public var localTime: String
    /// `decision.nextChange` in the same local time, when there is one.
    public var localNextChange: String?

    init(decision: Decision, context: DecisionContext, misses: [Miss]) {
        self.decision = decision
        self.link = context.primary?.name
        self.network = context.primaryClass
        self.misses = misses
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = context.timeZone
        self.localTime = DecisionContext.localStamp(context.now, calendar: calendar)
        self.localNextChange = decision.nextChange.map { DecisionContext.localStamp($0, calendar: calendar) }
    }

    /// The human rendering:
    ///
    ///     decision: pause (rule `pause-metered`)
    ///     why:
    ///       - rule `pause-metered` matched: metered is yes
    ///       ...
    ///     rules tried before it:
    ///       run-unmetered (policies/default.yaml:20)
    ///         - wwan0 is metered, the rule wants metered: no
    public var text: String {
        var lines: [String] = []
        var head = "decision: \(decision.action.rawValue)"
        if let rate = decision.rate { head += " at \(Units.formatBytes(rate))/s" }
        head += decision.rule.map { " (rule `\($0)`)" } ?? " (no rule matched: defaults)"
        lines.append(head)
        lines.append("at: \(localTime)")
        if !decision.allowedLinks.isEmpty { lines.append("links: " + decision.allowedLinks.joined(separator: ", ")) }
        if let next = localNextChange { lines.append("next change by time: \(next)") }
        lines.append("why:")
        lines += decision.reasons.map { "  - \($0)" }
        if misses.isEmpty {
            lines.append(decision.rule == nil ? "no rules to try." : "no rules before it.")
        } else {
            lines.append(decision.rule == nil ? "rules tried (none matched):" : "rules tried before it:")
            for miss in misses {
                lines.append("  \(miss.rule) (\(miss.origin))")
                lines += miss.why.map { "    - \($0)" }
            }
        }
        return lines.joined(separator: "\n")
    }

    /// `{"action": ..., "rule": ..., "rate": ..., "reasons": [...], ...}` with sorted keys; `rule` and
    /// `rate` are null when they do not apply.
    /// `policy`, when given, names where the policy came from (`PolicySource`).
    public func json(policy: String? = nil) -> String {
        struct Body: Encodable {
            var explanation: Explanation
            var policy: String?
            enum Keys: String, CodingKey {
                case action, rule, rate, reasons, link, metered, labels, roaming, skipped, policy
                case next_change, budget_key, allowed_links
            }
            func encode(to encoder: any Encoder) throws {
                let e = explanation
                var c = encoder.container(keyedBy: Keys.self)
                try c.encodeIfPresent(policy, forKey: .policy)
                try c.encode(e.decision.action.rawValue, forKey: .action)
                try c.encode(e.decision.rule, forKey: .rule)
                try c.encode(e.decision.rate, forKey: .rate)
                try c.encode(e.decision.reasons, forKey: .reasons)
                try c.encode(e.decision.allowedLinks, forKey: .allowed_links)
                try c.encode(e.link, forKey: .link)
                try c.encode(e.network?.metered, forKey: .metered)
                try c.encode(e.network?.labels ?? [], forKey: .labels)
                try c.encode(e.network?.roaming, forKey: .roaming)
                try c.encode(e.misses, forKey: .skipped)
                try c.encode(
                    e.decision.nextChange.map { ISO8601DateFormatter().string(from: $0) }, forKey: .next_change)
                try c.encode(e.decision.budgetKey, forKey: .budget_key)
            }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(Body(explanation: self, policy: policy)) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}
