import ConfigKit
import Links

/// The merged policy: every file of a directory in lexical order (like systemd drop-ins), or one file.
///
/// Merging: `networks:` and `rules:` entries are appended in file order; an entry whose `name` matches an
/// earlier one replaces it in place; `before: NAME` moves it in front of an earlier rule; `enabled: no`
/// removes the earlier entry of that name. `defaults:` keys override earlier values one by one.
/// See docs/policy.md.
public struct PolicySet: Sendable, Hashable {
    public var networks: [NetworkRule]
    public var rules: [Rule]
    public var defaults: PolicyDefaults
    /// The files the policy was read from, in merge order.
    public var files: [String]

    public init(
        networks: [NetworkRule] = [], rules: [Rule] = [], defaults: PolicyDefaults = PolicyDefaults(),
        files: [String] = []
    ) {
        self.networks = networks
        self.rules = rules
        self.defaults = defaults
        self.files = files
    }

    /// `defaults.resume_after`: how long the answer must stay `run` before a job that a pause stopped
    /// resumes (hysteresis). A job that was never paused starts at once; pausing is immediate.
    public var resumeAfter: Duration {
        get { defaults.resumeAfter }
        set { defaults.resumeAfter = newValue }
    }

    /// Parses and merges files given as text, in the order given. Every problem in every file is reported.
    public static func parse(files: [(name: String, text: String)]) throws(PolicyError) -> PolicySet {
        var issues: [ConfigIssue] = []
        var parsed: [PolicyFile] = []
        for file in files {
            let (result, fileIssues) = PolicyParser.parse(file.text, file: file.name)
            issues += fileIssues
            if let result { parsed.append(result) }
        }
        var merger = PolicyMerger()
        for file in parsed { merger.merge(file) }
        issues += merger.issues
        guard issues.isEmpty else { throw PolicyError(issues: issues) }
        return merger.policy
    }

    /// Whether a job under `decision` may move bytes over `link`, a link without a default route (a LAN the
    /// job's sources may sit on; docs/mirrors.md): the decision's rule's `via` says, as it does for uplinks
    /// (`unmetered`: the link's class; `any`: yes; a name: that link), and `defaults` use unmetered links only.
    /// An uplink is allowed only when `decision.allowedLinks` lists it. Pure.
    public func admits(_ link: Link, under decision: Decision) -> Bool {
        guard decision.mayRun, link.isUsable, link.kind != .loopback else { return false }
        if decision.allowedLinks.contains(link.name) { return true }
        let via = decision.rule.flatMap { name in rules.first { $0.name == name } }?.effectiveVia ?? .unmetered
        switch via {
        case .any: return true
        case .unmetered: return !classify(link: link).metered
        case .link(let name): return name == link.name
        }
    }

    /// The class of a link: the built-in guess, then every matching `networks:` rule in order.
    public func classify(link: Link) -> NetworkClass {
        var result = NetworkClass.builtIn(for: link)
        var labels = Set<String>()
        for rule in networks where rule.match.evaluate(link).matched {
            if let metered = rule.effect.metered { result.metered = metered }
            if let roaming = rule.effect.roaming { result.roaming = roaming }
            labels.formUnion(rule.effect.labels)
            var what: [String] = []
            if let metered = rule.effect.metered { what.append(metered ? "metered" : "not metered") }
            if let roaming = rule.effect.roaming { what.append(roaming ? "roaming" : "not roaming") }
            if !rule.effect.labels.isEmpty { what.append("labels " + rule.effect.labels.joined(separator: ", ")) }
            result.sources.append("network rule `\(rule.name)` (\(rule.origin)): \(what.joined(separator: "; "))")
        }
        result.labels = labels.sorted()
        return result
    }
}
