import ConfigKit
import Links
import Yams

/// Reads one policy file strictly: closed key sets, typed values, every problem collected with its
/// location and a hint.
enum PolicyParser {
    static let topKeys = ["version", "networks", "rules", "defaults"]
    static let networkKeys = ["name", "match", "set", "before", "enabled"]
    static let matchKeys = ["kind", "link", "ssid", "driver", "mac", "subnet", "metered_hint"]
    static let setKeys = ["metered", "labels", "roaming"]
    static let ruleKeys = ["name", "when", "action", "throttle", "via", "budget", "before", "enabled"]
    static let whenKeys = [
        "metered", "kind", "labels", "link", "roaming", "days", "time", "size", "priority", "tags",
        "allow_metered", "allow_roaming", "budget_left",
    ]
    static let budgetKeys = ["name", "bytes", "period", "resets"]
    static let defaultsKeys = ["resume_after", "action", "throttle"]
    static let kindHint = "one of " + LinkKind.allCases.map(\.rawValue).joined(separator: ", ")

    static func parse(_ text: String, file: String) -> (PolicyFile?, [ConfigIssue]) {
        var reader = YAMLReader(file: file)
        guard let root = reader.parse(text) else { return (nil, reader.issues) }
        var result = PolicyFile(name: file)
        var sawVersion = false
        for (key, _, value) in reader.mapping(root, what: "the policy file", allowed: topKeys) {
            switch key {
            case "version":
                sawVersion = true
                if let version = reader.int(value, what: "version"), version != 1 {
                    reader.record(
                        value, "unsupported policy version \(version)", hint: "this meterwise reads `version: 1`")
                }
            case "networks":
                result.networks = entries(value, what: "networks", reader: &reader) { node, name, r in
                    readNetwork(node, name: name, reader: &r)
                }
            case "rules":
                result.rules = entries(value, what: "rules", reader: &reader) { node, name, r in
                    readRule(node, name: name, reader: &r)
                }
            case "defaults": readDefaults(value, into: &result, reader: &reader)
            default: break
            }
        }
        if !sawVersion, case .mapping = root {
            reader.record(root, "the policy file has no `version:`", hint: "start the file with `version: 1`")
        }
        return (result, reader.issues)
    }

    /// Reads a list of named entries, handling `name`, `before` and `enabled` for each; `body` reads the rest.
    static func entries<Value>(
        _ node: Node, what: String, reader: inout YAMLReader,
        body: (Node, String, inout YAMLReader) -> Value?
    ) -> [PolicyFile.Entry<Value>] {
        if case .scalar(let scalar) = node, ["", "~", "null"].contains(scalar.string) { return [] }  // `rules:` alone
        guard case .sequence(let sequence) = node else {
            reader.record(node, "\(what) must be a list of entries starting with `- name: ...`")
            return []
        }
        var result: [PolicyFile.Entry<Value>] = []
        var seen: Set<String> = []
        for (position, item) in sequence.enumerated() {
            guard case .mapping(let mapping) = item else {
                reader.record(item, "each entry of \(what) must be a mapping with a `name:`")
                continue
            }
            var name: String?
            var enabled = true
            var before: String?
            for (key, value) in mapping {
                switch key.string {
                case "name": name = reader.string(value, what: "name")
                case "enabled": enabled = reader.bool(value, what: "enabled") ?? true
                case "before": before = reader.string(value, what: "before")
                default: break
                }
            }
            let line = item.mark?.line ?? 1
            let column = item.mark?.column ?? 1
            guard let name, !name.isEmpty else {
                reader.record(
                    item, "entry \(position + 1) of \(what) has no name", hint: "add `name: something-descriptive`")
                _ = body(item, "#\(position + 1)", &reader)  // still report the other problems in it
                continue
            }
            if !seen.insert(name).inserted {
                reader.record(item, "\(what) has two entries named `\(name)`", hint: "give each entry its own name")
            }
            if !enabled {
                let others = mapping.keys.compactMap(\.string).filter { $0 != "name" && $0 != "enabled" }
                if !others.isEmpty {
                    reader.record(
                        item, "`enabled: no` removes the earlier entry `\(name)`; it takes no other keys",
                        hint: "remove \(others.joined(separator: ", ")) or `enabled: no`")
                }
                result.append(
                    .init(
                        name: name, value: nil, removes: true, before: nil, file: reader.file, line: line,
                        column: column))
                continue
            }
            let value = body(item, name, &reader)
            result.append(
                .init(name: name, value: value, before: before, file: reader.file, line: line, column: column))
        }
        return result
    }

    // MARK: networks

    static func readNetwork(_ node: Node, name: String, reader: inout YAMLReader) -> NetworkRule? {
        var match = NetworkRule.Match()
        var effect = NetworkRule.Effect()
        var sawSet = false
        for (key, _, value) in reader.mapping(node, what: "network rule `\(name)`", allowed: networkKeys) {
            switch key {
            case "match":
                for (k, _, v) in reader.mapping(value, what: "match of `\(name)`", allowed: matchKeys) {
                    switch k {
                    case "kind": match.kinds = kinds(v, reader: &reader)
                    case "link": match.names = globs(v, what: "link", reader: &reader)
                    case "ssid": match.ssids = globs(v, what: "ssid", reader: &reader)
                    case "driver": match.drivers = globs(v, what: "driver", reader: &reader)
                    case "mac": match.macs = macs(v, reader: &reader)
                    case "subnet": match.subnets = subnets(v, reader: &reader)
                    case "metered_hint": match.meteredHint = reader.bool(v, what: "metered_hint")
                    default: break
                    }
                }
            case "set":
                sawSet = true
                for (k, _, v) in reader.mapping(value, what: "set of `\(name)`", allowed: setKeys) {
                    switch k {
                    case "metered": effect.metered = reader.bool(v, what: "metered")
                    case "roaming": effect.roaming = reader.bool(v, what: "roaming")
                    case "labels": effect.labels = labels(v, what: "labels", reader: &reader)
                    default: break
                    }
                }
            default: break
            }
        }
        if !sawSet {
            reader.record(
                node, "network rule `\(name)` has no `set:`",
                hint: "add `set: { metered: yes }` or `set: { labels: [home] }`")
        }
        return NetworkRule(name: name, match: match, effect: effect, origin: origin(node, reader))
    }

    // MARK: rules

    static func readRule(_ node: Node, name: String, reader: inout YAMLReader) -> Rule? {
        var condition = Condition()
        var action: Action?
        var actionNode: Node?
        var rate: Int64?
        var via: Via?
        var budget: Budget?
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
                rate = reader.rate(value, what: "throttle")
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
        return Rule(
            name: name, when: condition, action: action, rate: rate, via: via, budget: budget,
            origin: origin(node, reader))
    }

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
                c.size = comparison(v, what: "size", reader: &reader, hint: Units.bytesHint, value: Units.parseBytes)
            case "priority":
                c.priority = comparison(v, what: "priority", reader: &reader, hint: "a whole number, e.g. `>= 5`") {
                    Int64($0)
                }
            case "tags": c.tags = labels(v, what: "tags", reader: &reader)
            case "allow_metered": c.allowMetered = reader.bool(v, what: "allow_metered")
            case "allow_roaming": c.allowRoaming = reader.bool(v, what: "allow_roaming")
            case "budget_left":
                budgetLeftNode = v
                c.budgetLeft = comparison(
                    v, what: "budget_left", reader: &reader, hint: Units.bytesHint, value: Units.parseBytes)
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

    static func readBudget(_ node: Node, rule: String, reader: inout YAMLReader) -> Budget? {
        var name = rule
        var bytes: Int64?
        var period: Budget.Period?
        var resetsNode: Node?
        var resets: String?
        for (key, _, v) in reader.mapping(node, what: "budget of `\(rule)`", allowed: budgetKeys) {
            switch key {
            case "name": name = reader.string(v, what: "budget name") ?? name
            case "bytes": bytes = reader.bytes(v, what: "budget bytes")
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

    // MARK: defaults

    static func readDefaults(_ node: Node, into file: inout PolicyFile, reader: inout YAMLReader) {
        var throttleNode: Node?
        for (key, keyNode, v) in reader.mapping(node, what: "defaults", allowed: defaultsKeys) {
            switch key {
            case "resume_after": file.resumeAfter = reader.duration(v, what: "resume_after")
            case "action":
                if let text = reader.string(v, what: "action") {
                    if let a = Action(rawValue: text), a != .throttle {
                        file.action = a
                    } else {
                        reader.record(
                            v, "bad default action `\(text)`",
                            hint: "use `action: run`, `action: pause` or `throttle: 512KiB/s`")
                    }
                }
            case "throttle":
                throttleNode = keyNode
                file.rate = reader.rate(v, what: "throttle")
            default: break
            }
        }
        if let throttleNode {
            if file.action != nil {
                reader.record(throttleNode, "defaults has both `action:` and `throttle:`", hint: "keep one")
            } else if file.rate != nil {
                file.action = .throttle
            }
        }
    }

    // MARK: value readers

    static func origin(_ node: Node, _ reader: YAMLReader) -> String {
        "\(reader.file):\(node.mark?.line ?? 1)"
    }

    static func kinds(_ node: Node, reader: inout YAMLReader) -> [LinkKind] {
        var result: [LinkKind] = []
        for item in reader.list(node, what: "kind") {
            guard let text = reader.string(item, what: "kind") else { continue }
            if let kind = LinkKind(rawValue: text) {
                result.append(kind)
            } else {
                reader.record(item, "unknown link kind `\(text)`", hint: kindHint)
            }
        }
        return result
    }

    static func globs(_ node: Node, what: String, reader: inout YAMLReader) -> [Glob] {
        var result: [Glob] = []
        for item in reader.list(node, what: what) {
            guard let text = reader.string(item, what: what) else { continue }
            switch Glob.compile(text) {
            case .success(let glob): result.append(glob)
            case .failure(let error): reader.record(item, "bad \(what) glob: \(error.message)", hint: Glob.hint)
            }
        }
        return result
    }

    static func macs(_ node: Node, reader: inout YAMLReader) -> [Glob] {
        var result: [Glob] = []
        for item in reader.list(node, what: "mac") {
            guard var text = reader.string(item, what: "mac")?.lowercased() else { continue }
            let octets = text.split(separator: ":", omittingEmptySubsequences: false)
            let plain = octets.allSatisfy { $0.count == 2 && $0.allSatisfy(\.isHexDigit) }
            if plain, octets.count == 3 { text += ":*" }  // an OUI
            let hasGlob = text.contains { "*?[".contains($0) }
            guard (plain && (octets.count == 3 || octets.count == 6)) || hasGlob else {
                reader.record(
                    item, "bad MAC address or OUI `\(text)`",
                    hint: "write a MAC as aa:bb:cc:dd:ee:ff, an OUI as aa:bb:cc, or a glob such as 02:00:00:*")
                continue
            }
            switch Glob.compile(text) {
            case .success(let glob): result.append(glob)
            case .failure(let error): reader.record(item, "bad mac glob: \(error.message)", hint: Glob.hint)
            }
        }
        return result
    }

    static func subnets(_ node: Node, reader: inout YAMLReader) -> [Subnet] {
        var result: [Subnet] = []
        for item in reader.list(node, what: "subnet") {
            guard let text = reader.string(item, what: "subnet") else { continue }
            if let subnet = Subnet(text) {
                result.append(subnet)
            } else {
                reader.record(item, "bad subnet `\(text)`", hint: Subnet.hint)
            }
        }
        return result
    }

    static func labels(_ node: Node, what: String, reader: inout YAMLReader) -> [String] {
        var result: [String] = []
        for item in reader.list(node, what: what) {
            guard let text = reader.string(item, what: what) else { continue }
            if text.isEmpty || text.contains(where: { $0 == " " || $0 == "," }) {
                reader.record(
                    item, "bad \(what) entry `\(text)`",
                    hint: "\(what) are single words such as home or hotspot; write a list as [a, b]")
            } else {
                result.append(text)
            }
        }
        return result
    }

    static func comparison(
        _ node: Node, what: String, reader: inout YAMLReader, hint: String,
        value: (String) -> Int64?
    ) -> Comparison? {
        guard let text = reader.string(node, what: what) else { return nil }
        guard let result = Comparison.parse(text, value: value) else {
            reader.record(
                node, "bad \(what) test `\(text)`",
                hint:
                    "write `< X`, `<= X`, `> X`, `>= X`, `= X` or a range `A..B` (A included, B excluded); values: \(hint)"
            )
            return nil
        }
        return result
    }
}
