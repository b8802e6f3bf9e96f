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
    static let ruleKeys = [
        "name", "when", "action", "throttle", "via", "prefer", "budget", "mode", "before", "enabled",
    ]
    static let whenKeys = [
        "metered", "kind", "labels", "link", "roaming", "days", "time", "size", "priority", "tags",
        "allow_metered", "allow_roaming", "budget_left", "connectivity", "power", "battery", "power_saver",
    ]
    static let budgetKeys = ["name", "bytes", "period", "resets", "per_user"]
    static let defaultsKeys = ["resume_after", "action", "throttle", "keep_free", "mode"]
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
                if let version = reader.int(value, what: "version", in: PolicyBounds.version), version != 1 {
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

    // MARK: defaults

    /// `mode: background` or `mode: foreground`.
    static func readMode(_ node: Node, reader: inout YAMLReader) -> TransferMode? {
        guard let text = reader.string(node, what: "mode") else { return nil }
        guard let mode = TransferMode(rawValue: text) else {
            reader.record(
                node, "unknown mode `\(text.prefix(40))`",
                hint: "use `mode: background` (gives way to other traffic) or `mode: foreground`")
            return nil
        }
        return mode
    }

    static func readDefaults(_ node: Node, into file: inout PolicyFile, reader: inout YAMLReader) {
        var throttleNode: Node?
        for (key, keyNode, v) in reader.mapping(node, what: "defaults", allowed: defaultsKeys) {
            switch key {
            case "resume_after":
                file.resumeAfter = reader.duration(v, what: "resume_after", atMost: PolicyBounds.resumeAfter)
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
                file.rate = reader.rate(v, what: "throttle", atMost: PolicyBounds.rate)
            case "mode": file.mode = readMode(v, reader: &reader)
            case "keep_free":
                guard let text = reader.string(v, what: "keep_free") else { continue }
                if let value = KeepFree.parse(text) {
                    file.keepFree = value
                } else {
                    reader.record(
                        v, "bad keep_free `\(text.prefix(40))`",
                        hint: "a size (`2GiB`) or a percentage of the filesystem (`10%`)")
                }
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

}
