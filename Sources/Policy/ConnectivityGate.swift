import Links

/// Links behind a captive portal, on a limited network or with none are not used for downloads, whatever
/// rule matched, unless that rule tests `connectivity` itself (docs/policy.md, "Connectivity"). Pure.
public enum ConnectivityGate {
    /// Why `link` is not used now, or nil when it may be: the state, its source and what ends the wait.
    public static func blocked(_ link: Link) -> String? {
        guard let state = link.connectivity, state.blocksDownloads else { return nil }
        let source = link.connectivitySource ?? "unknown source"
        let ends = "downloads resume when \(source) says full"
        switch state {
        case .portal:
            let where_ = link.portalURL.map { "sign in at \($0)" } ?? "sign in (open any http:// page in a browser)"
            return "captive portal on \(link.name): \(where_) (\(source)); \(ends)"
        case .limited:
            return "\(link.name) reaches its network but not the internet (\(source): limited); \(ends)"
        default:
            return "\(link.name) has no network (\(source): none); \(ends)"
        }
    }

    /// `decision` with the blocked links taken out of its allowed links: paused, the first blocked link's
    /// reason first, when none is left; `uplinks` are the snapshot's usable uplinks. A decision of a rule
    /// that tests `connectivity`, or one that moves nothing, is left as it is.
    static func apply(_ decision: Decision, rule: Rule?, uplinks: [Link]) -> Decision {
        guard decision.action != .pause, rule?.when.connectivity.isEmpty ?? true else { return decision }
        let blocked: [(name: String, reason: String)] = uplinks.compactMap { link in
            Self.blocked(link).map { (link.name, $0) }
        }
        guard !blocked.isEmpty else { return decision }
        let names = Set(blocked.map(\.name))
        let left = decision.allowedLinks.filter { !names.contains($0) }
        guard left.count < decision.allowedLinks.count else { return decision }
        let reasons = blocked.filter { decision.allowedLinks.contains($0.name) }.map(\.reason)
        var gated = decision
        if left.isEmpty {
            gated.action = .pause
            gated.rate = nil
            gated.allowedLinks = []
            gated.budgetKey = nil
            gated.heldBy = reasons.first.map { String($0.prefix { $0 != ";" }) }
            gated.reasons = reasons + decision.reasons
        } else {
            gated.allowedLinks = left
            gated.reasons = decision.reasons + reasons.map { "not using " + $0 }
        }
        return gated
    }
}
