import ConfigKit

/// One parsed policy file, before merging: its entries keep the drop-in directives (`before`, `enabled`)
/// and their locations, so that the merge can report problems at `file:line:column`.
struct PolicyFile: Sendable {
    struct Entry<Value: Sendable>: Sendable {
        var name: String
        /// Nil when the entry removes an earlier one (`enabled: no`) or did not parse.
        var value: Value?
        /// `enabled: no`: remove the earlier entry of this name.
        var removes: Bool = false
        var before: String?
        var file: String
        var line: Int
        var column: Int
    }

    var name: String
    var networks: [Entry<NetworkRule>] = []
    var rules: [Entry<Rule>] = []
    var resumeAfter: Duration?
    var keepFree: KeepFree?
    var action: Action?
    var rate: Int64?
    var mode: TransferMode?
}

/// Merges parsed files in order into one `PolicySet` (see `PolicySet` for the rules of the merge).
struct PolicyMerger {
    var policy = PolicySet()
    var issues: [ConfigIssue] = []
    /// Budgets by name with where they were first declared, to catch one name used for two allowances.
    var budgets: [String: (Budget, String)] = [:]

    mutating func merge(_ file: PolicyFile) {
        policy.files.append(file.name)
        for entry in file.networks {
            Self.apply(entry, to: &policy.networks, what: "network rule", name: \.name, issues: &issues)
        }
        for entry in file.rules {
            if let budget = entry.value?.budget {
                let origin = "\(entry.file):\(entry.line)"
                if let (earlier, where_) = budgets[budget.name], earlier != budget {
                    issues.append(
                        ConfigIssue(
                            file: entry.file, line: entry.line, column: entry.column,
                            message: "budget `\(budget.name)` is declared differently at \(where_)",
                            hint:
                                "rules that share a budget must give the same bytes, period and resets; or give this one another `name`"
                        ))
                } else {
                    budgets[budget.name] = (budget, origin)
                }
            }
            Self.apply(entry, to: &policy.rules, what: "rule", name: \.name, issues: &issues)
        }
        if let value = file.resumeAfter { policy.defaults.resumeAfter = value }
        if let value = file.keepFree { policy.defaults.keepFree = value }
        if let value = file.mode { policy.defaults.mode = value }
        if let value = file.action {
            policy.defaults.action = value
            policy.defaults.rate = file.rate
        }
    }

    static func apply<Value>(
        _ entry: PolicyFile.Entry<Value>, to list: inout [Value], what: String,
        name: KeyPath<Value, String>, issues: inout [ConfigIssue]
    ) {
        let existing = list.firstIndex { $0[keyPath: name] == entry.name }
        guard let value = entry.value else {
            guard entry.removes else { return }  // did not parse; its problems are already reported
            if let existing {
                list.remove(at: existing)
            } else {
                issues.append(
                    ConfigIssue(
                        file: entry.file, line: entry.line, column: entry.column,
                        message: "`enabled: no` names \(what) `\(entry.name)`, which no earlier file defines",
                        hint: "defined \(what)s: " + list.map { $0[keyPath: name] }.joined(separator: ", ")))
            }
            return
        }
        if let before = entry.before {
            if let existing { list.remove(at: existing) }
            guard let target = list.firstIndex(where: { $0[keyPath: name] == before }) else {
                issues.append(
                    ConfigIssue(
                        file: entry.file, line: entry.line, column: entry.column,
                        message: "`before: \(before)` names no earlier \(what)",
                        hint: "earlier \(what)s: " + list.map { $0[keyPath: name] }.joined(separator: ", ")))
                list.append(value)
                return
            }
            list.insert(value, at: target)
        } else if let existing {
            list[existing] = value
        } else {
            list.append(value)
        }
    }
}
