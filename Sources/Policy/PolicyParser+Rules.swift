import ConfigKit
import Links
import Yams

/// Rules: `when:` conditions and budgets.
extension PolicyParser {
    static func readRule(_ node: Node, name: String, reader: inout YAMLReader) -> Rule? {
        var condition = Condition()
        var action: Action?
        var actionNode: Node?
        var rate: Int64?
        var via: Via?
        var budget: Budget?
        var mode: TransferMode?
        var prefer: SourcePreference?
        var budgetLeftNode: Node?
        var sawThrottle = false
        for (key, _, value) in reader.mapping(node, what: "rule `\(name)`", allowed: ruleKeys) {
            switch key {
            case "when":
                budgetLeftNode = readCondition(value, into: &condition, rule: name, reader: &reader)
            case "action":
                actionNode = value
                if let text = reader.string(value, what: "action") {
                    if let a = Action(rawValue: text) {
                        action = a
                    } else {
                        reader.record(
                            value, "unknown action `\(text)`",
                            hint: "use `action: run`, `action: pause` or `throttle: 512KiB/s`")
                    }
                }
            case "throttle":
                sawThrottle = true
                rate = reader.rate(value, what: "throttle", atMost: PolicyBounds.rate)
            case "via":
                if let text = reader.string(value, what: "via") {
                    switch text {
                    case "unmetered": via = .unmetered
                    case "any": via = .any
                    case "": reader.record(value, "via is empty", hint: "use unmetered, any or a link name")
                    default:
                        if text.contains(where: { "*?[".contains($0) }) {
                            reader.record(
                                value, "via names one link; `\(text)` looks like a glob",
                                hint: "use unmetered, any or an exact link name such as eth0")
                        }
                        via = .link(text)
                    }
                }
            case "budget": budget = readBudget(value, rule: name, reader: &reader)
            case "mode": mode = readMode(value, reader: &reader)
            case "prefer": prefer = readPreference(value, reader: &reader)
            default: break
            }
        }
        if sawThrottle {
            if let action {
                reader.record(
                    actionNode ?? node, "rule `\(name)` has both `action: \(action.rawValue)` and `throttle:`",
                    hint: "keep one: `throttle: RATE` alone means throttle")
            }
            action = rate == nil ? nil : .throttle
        } else if action == .throttle {
            reader.record(
                actionNode ?? node, "`action: throttle` needs a rate", hint: "write `throttle: 1MiB/s` instead")
            action = nil
        } else if action == nil, actionNode == nil {
            reader.record(
                node, "rule `\(name)` has no action", hint: "add `action: run`, `action: pause` or `throttle: 512KiB/s`"
            )
        }
        if let budgetLeftNode, budget == nil {
            reader.record(
                budgetLeftNode, "`budget_left` tests the rule's budget, but rule `\(name)` has none",
                hint: "add `budget: { bytes: 500MiB, period: monthly }` to the rule")
        }
        guard let action else { return nil }
        var rule = Rule(
            name: name, when: condition, action: action, rate: rate, via: via, budget: budget,
            origin: origin(node, reader))
        rule.mode = mode
        rule.prefer = prefer
        return rule
    }

    /// `prefer: lan`, or one host or a list of hosts (globs, matched without regard to case).
    static func readPreference(_ node: Node, reader: inout YAMLReader) -> SourcePreference? {
        let items: [Node]
        switch node {
        case .scalar(let scalar):
            if scalar.string.lowercased() == "lan" { return .lan }
            items = [node]
        case .sequence(let sequence):
            items = Array(sequence)
            if items.isEmpty {
                reader.record(node, "prefer lists no host", hint: preferHint)
                return nil
            }
        default:
            reader.record(node, "prefer is `lan` or a list of hosts", hint: preferHint)
            return nil
        }
        var globs: [Glob] = []
        for item in items {
            guard case .scalar(let scalar) = item else {
                reader.record(item, "each host in prefer is one name, address or glob", hint: preferHint)
                continue
            }
            let text = scalar.string
            if text.lowercased() == "lan" {
                reader.record(
                    item, "`lan` goes alone: `prefer: lan`",
                    hint: "or list host names: `prefer: [cache.lan, mirror.example]`")
                continue
            }
            if let problem = hostProblem(text) {
                reader.record(item, "bad host `\(text.prefix(60))` in prefer: \(problem)", hint: preferHint)
                continue
            }
            switch Glob.compile(text.lowercased()) {
            case .success(let glob): globs.append(glob)
            case .failure(let error): reader.record(item, "bad prefer glob: \(error.message)", hint: Glob.hint)
            }
        }
        return globs.isEmpty ? nil : .hosts(globs)
    }

    /// Why `text` cannot be a host (or a glob of hosts) as a URL writes it; nil when it can.
    static func hostProblem(_ text: String) -> String? {
        if text.isEmpty { return "it is empty" }
        if text.utf8.count > 253 { return "a host name is at most 253 bytes" }
        if text.contains("/") { return "give the host alone, not a URL" }
        if text.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7f }) {
            return "it contains spaces or control characters"
        }
        if ["true", "false", "yes", "no", "on", "off", "null", "~"].contains(text.lowercased()) {
            return "a yes/no or null is not a host"
        }
        if text.allSatisfy(\.isNumber) { return "a number is not a host; an address has dots (10.0.0.5)" }
        if text.filter({ $0 == ":" }).count == 1 { return "give the host without its port" }
        // `.inf` and `.nan` are YAML's numbers; a name's labels are never empty (`*.example` is a glob's).
        if !text.contains(":"), text.hasPrefix(".") || text.contains("..") {
            return "a host name has no empty label (a leading or doubled dot)"
        }
        return nil
    }

    static let preferHint =
        "use `prefer: lan` (sources on a local subnet) or host names as in the URLs, e.g. `prefer: [cache.lan, \"10.0.0.*\"]`"

    /// Reads `when:`; returns the `budget_left` node when there is one (it needs a budget on the rule).
    static func readCondition(_ node: Node, into c: inout Condition, rule: String, reader: inout YAMLReader) -> Node? {
        var days: Set<Int>?
        var daysNode: Node?
        var hours: [(Int, Int)] = []
        var budgetLeftNode: Node?
        for (key, _, v) in reader.mapping(node, what: "when of `\(rule)`", allowed: whenKeys) {
            switch key {
            case "metered": c.metered = reader.bool(v, what: "metered")
            case "kind": c.kinds = kinds(v, reader: &reader)
            case "labels": c.labels = labels(v, what: "labels", reader: &reader)
            case "link": c.links = globs(v, what: "link", reader: &reader)
            case "roaming": c.roaming = reader.bool(v, what: "roaming")
            case "connectivity": c.connectivity = connectivities(v, reader: &reader)
            case "power":
                switch reader.string(v, what: "power") {
                case "ac"?: c.onBattery = false
                case "battery"?: c.onBattery = true
                case let other?:
                    reader.record(v, "unknown power `\(other.prefix(40))`", hint: "`power: ac` or `power: battery`")
                case nil: break
                }
            case "battery":
                c.battery = comparison(v, what: "battery", reader: &reader, hint: "e.g. `battery: \"< 30%\"`") { text in
                    let number = text.hasSuffix("%") ? String(text.dropLast()).strippingSpaces() : text
                    return Int64(number).flatMap { (0...100).contains($0) ? $0 : nil }
                }
            case "power_saver": c.powerSaver = reader.bool(v, what: "power_saver")
            case "days":
                daysNode = v
                var set: Set<Int> = []
                for item in reader.list(v, what: "days") {
                    guard let text = reader.string(item, what: "days") else { continue }
                    for part in text.split(separator: ",") {
                        let word = String(part).strippingSpaces()
                        if let d = TimeWindow.parseDays(String(word)) {
                            set.formUnion(d)
                        } else {
                            reader.record(item, "unknown day `\(word)`", hint: TimeWindow.dayHint)
                        }
                    }
                }
                days = set
            case "time":
                for item in reader.list(v, what: "time") {
                    guard let text = reader.string(item, what: "time") else { continue }
                    if let h = TimeWindow.parseHours(text) {
                        hours.append(h)
                    } else {
                        reader.record(item, "bad time window `\(text)`", hint: TimeWindow.hint)
                    }
                }
            case "size":
                c.size = comparison(
                    v, what: "size", reader: &reader, hint: sizeTestHint, value: { sizeTestValue($0) })
            case "priority":
                c.priority = comparison(v, what: "priority", reader: &reader, hint: priorityHint) { text in
                    Int64(text).flatMap { PolicyBounds.priority.contains($0) ? $0 : nil }
                }
            case "tags": c.tags = labels(v, what: "tags", reader: &reader)
            case "allow_metered": c.allowMetered = reader.bool(v, what: "allow_metered")
            case "allow_roaming": c.allowRoaming = reader.bool(v, what: "allow_roaming")
            case "budget_left":
                budgetLeftNode = v
                c.budgetLeft = comparison(
                    v, what: "budget_left", reader: &reader, hint: sizeTestHint, value: { sizeTestValue($0) })
            default: break
            }
        }
        if let days, days.isEmpty, let daysNode {
            reader.record(daysNode, "days is empty", hint: TimeWindow.dayHint)
        }
        if !hours.isEmpty {
            c.windows = hours.map { TimeWindow(start: $0.0, end: $0.1, days: days ?? TimeWindow.everyDay) }
        } else if let days, !days.isEmpty {
            c.windows = [TimeWindow(start: 0, end: 1440, days: days)]
        }
        return budgetLeftNode
    }

    static let sizeTestHint = Units.bytesHint + ", at most " + PolicyBounds.sizeTest.text
    static let priorityHint =
        "a whole number from \(PolicyBounds.priority.lowerBound) to \(PolicyBounds.priority.upperBound), e.g. `>= 5`"

    /// A size in a `size` or `budget_left` test, within `PolicyBounds.sizeTest`.
    static func sizeTestValue(_ text: String) -> Int64? {
        Units.parseBytes(text).flatMap { $0 <= PolicyBounds.sizeTest.value ? $0 : nil }
    }

    static func readBudget(_ node: Node, rule: String, reader: inout YAMLReader) -> Budget? {
        var name = rule
        var bytes: Int64?
        var period: Budget.Period?
        var resetsNode: Node?
        var resets: String?
        var perUser = false
        for (key, _, v) in reader.mapping(node, what: "budget of `\(rule)`", allowed: budgetKeys) {
            switch key {
            case "name": name = reader.string(v, what: "budget name") ?? name
            case "bytes": bytes = reader.bytes(v, what: "budget bytes", atMost: PolicyBounds.budgetBytes)
            case "period":
                if let text = reader.string(v, what: "period") {
                    period = Budget.Period(rawValue: text)
                    if period == nil {
                        reader.record(v, "unknown budget period `\(text)`", hint: "use daily, weekly or monthly")
                    }
                }
            case "resets":
                resetsNode = v
                resets = reader.string(v, what: "resets")
            case "per_user": perUser = reader.bool(v, what: "per_user") ?? false
            default: break
            }
        }
        guard case .mapping(let mapping) = node else { return nil }
        let written = Set(mapping.keys.compactMap(\.string))
        if !written.contains("bytes") {
            reader.record(node, "budget of `\(rule)` has no `bytes:`", hint: "add `bytes: 500MiB`")
        }
        if !written.contains("period") {
            reader.record(
                node, "budget of `\(rule)` has no `period:`", hint: "add `period: monthly` (or daily, weekly)")
        }
        guard let bytes, let period else { return nil }
        var budget = Budget(name: name, bytes: bytes, period: period)
        budget.perUser = perUser
        if let resets, let resetsNode {
            if !parseResets(resets, into: &budget) {
                reader.record(
                    resetsNode, "bad `resets: \(resets)` for a \(period.rawValue) budget", hint: Budget.resetsHint)
            }
        }
        return budget
    }

    /// `03:00` (daily), `mon` / `mon 03:00` (weekly), `1` / `15 03:00` (monthly).
    static func parseResets(_ text: String, into budget: inout Budget) -> Bool {
        let parts = text.split(separator: " ").map(String.init)
        guard (1...2).contains(parts.count) else { return false }
        var timePart: String?
        switch budget.period {
        case .daily:
            guard parts.count == 1 else { return false }
            timePart = parts[0]
        case .weekly:
            guard let days = TimeWindow.parseDays(parts[0]), days.count == 1 else { return false }
            budget.resetWeekday = days.first!
            timePart = parts.count == 2 ? parts[1] : nil
        case .monthly:
            guard let day = Int(parts[0]), (1...28).contains(day) else { return false }
            budget.resetDay = day
            timePart = parts.count == 2 ? parts[1] : nil
        }
        if let timePart {
            guard let minute = TimeWindow.minutes(timePart, allow24: false) else { return false }
            budget.resetMinute = minute
        }
        return true
    }
}
