import ConfigKit
import Yams

#if canImport(Glibc)
import Glibc
#endif

/// Reads scenario files (YAML). Every problem is reported with `file:line:column`.
public enum ScenarioParser {
    static let topKeys = ["name", "description", "links", "steps", "end"]
    static let linkKeys = ["kind", "ssid", "metered", "addresses", "driver"]
    static let stepKeys = [
        "at", "up", "down", "primary", "note", "connectivity", "portal", "power", "battery", "profile",
    ]
    /// The latest instant a scenario may name (`at:`, `end:`): a week of simulated time; replayed faster or
    /// slower (`--speed`), it still fits a `Duration` many times over.
    public static let maxTime = Cap<Duration>(.seconds(7 * 86_400), "7d")

    /// Parses scenario text. `file` is used in error locations.
    public static func parse(_ text: String, file: String) throws(LinksError) -> Scenario {
        var reader = YAMLReader(file: file)
        let scenario = read(text, reader: &reader)
        if let scenario, reader.issues.isEmpty { return scenario }
        let issues = reader.issues
        let first = issues.first
        throw LinksError(
            .scenarioInvalid, issues.map(\.description).joined(separator: "\n"),
            file: nil, line: first?.line, column: first?.column)
    }

    /// Loads a scenario file from disk.
    public static func load(path: String) throws(LinksError) -> Scenario {
        let text: String?
        do {
            text = try ConfigText.read(path, directories: false)
        } catch {
            throw LinksError(.scenarioInvalid, error.description, file: nil, line: error.line, column: error.column)
        }
        guard let text else {
            let why =
                access(path, F_OK) == 0
                ? "it cannot be read; check its permissions"
                : "there is no such file"
                    + (path.hasPrefix("/") ? "" : " (a relative path starts in the current folder)")
            throw LinksError(.fileUnreadable, "cannot read scenario file \(path): \(why)")
        }
        return try parse(text, file: path)
    }

    static func read(_ text: String, reader: inout YAMLReader) -> Scenario? {
        guard let root = reader.parse(text) else { return nil }
        var name = "scenario"
        var description: String?
        var links: [Scenario.LinkSpec] = []
        var stepsNode: Node?
        var end: Duration?
        for (key, keyNode, value) in reader.mapping(root, what: "the scenario", allowed: topKeys) {
            switch key {
            case "name": name = reader.string(value, what: "name") ?? name
            case "description": description = reader.string(value, what: "description")
            case "end": end = reader.duration(value, what: "end", atMost: maxTime)
            case "links": links = readLinks(value, reader: &reader)
            case "steps": stepsNode = value
            default: reader.record(keyNode, "unexpected key \(key)")
            }
        }
        if links.isEmpty {
            reader.record(root, "the scenario declares no links", hint: "add `links: { wlan0: { kind: wlan } }`")
        }
        guard let stepsNode else {
            reader.record(root, "the scenario has no steps", hint: "add `steps: [ { at: 0s, up: [wlan0] } ]`")
            return nil
        }
        let steps = readSteps(stepsNode, links: links, reader: &reader)
        if let end, let last = steps.last, end < last.at {
            reader.record(root, "end (\(end)) is before the last step")
        }
        return Scenario(name: name, description: description, links: links, steps: steps, end: end)
    }

    static func readLinks(_ node: Node, reader: inout YAMLReader) -> [Scenario.LinkSpec] {
        var specs: [Scenario.LinkSpec] = []
        for (name, keyNode, value) in reader.mapping(node, what: "links") {
            var spec = Scenario.LinkSpec(name: name, kind: .other)
            var sawKind = false
            for (key, _, field) in reader.mapping(value, what: "link \(name)", allowed: linkKeys) {
                switch key {
                case "kind":
                    guard let text = reader.string(field, what: "kind") else { continue }
                    if let kind = LinkKind(rawValue: text) {
                        spec.kind = kind
                        sawKind = true
                    } else {
                        reader.record(
                            field, "unknown link kind `\(text)`",
                            hint: "one of " + LinkKind.allCases.map(\.rawValue).joined(separator: ", "))
                    }
                case "ssid": spec.ssid = reader.string(field, what: "ssid")
                case "metered": spec.meteredHint = reader.bool(field, what: "metered")
                case "addresses": spec.addresses = reader.strings(field, what: "addresses")
                case "driver": spec.driver = reader.string(field, what: "driver")
                default: break
                }
            }
            if !sawKind {
                reader.record(keyNode, "link \(name) has no kind", hint: "add `kind: wlan` (or wwan, ethernet, ...)")
            }
            specs.append(spec)
        }
        return specs
    }

    static func readSteps(_ node: Node, links: [Scenario.LinkSpec], reader: inout YAMLReader) -> [Scenario.Step] {
        guard case let .sequence(sequence) = node else {
            reader.record(node, "steps must be a list of `- { at: 0s, up: [...] }`")
            return []
        }
        let known = Set(links.map(\.name))
        var steps: [Scenario.Step] = []
        var upLinks: Set<String> = []
        var previousAt: Duration = .zero
        for item in sequence {
            var step = Scenario.Step(at: .zero, line: item.mark?.line ?? 0)
            var sawAt = false
            var primaryNode: Node?
            for (key, _, value) in reader.mapping(item, what: "a step", allowed: stepKeys) {
                switch key {
                case "at":
                    if let at = reader.duration(value, what: "at", atMost: maxTime) {
                        step.at = at
                        sawAt = true
                        if at < previousAt {
                            reader.record(value, "steps must be in time order: \(at) comes after \(previousAt)")
                        }
                    }
                case "up", "down":
                    let names = reader.strings(value, what: key)
                    for linkName in names where !known.contains(linkName) {
                        reader.record(
                            value, "step names link `\(linkName)`, which `links:` does not declare",
                            hint: "declared links: " + links.map(\.name).joined(separator: ", "))
                    }
                    if key == "up" { step.up = names } else { step.down = names }
                case "primary":
                    primaryNode = value
                    let text = reader.string(value, what: "primary")
                    if text == nil || text == "none" || text == "null" || text == "" {
                        step.clearsPrimary = true
                    } else if let text {
                        if known.contains(text) {
                            step.primary = text
                        } else {
                            reader.record(value, "primary `\(text)` is not a declared link")
                        }
                    }
                case "note": step.note = reader.string(value, what: "note")
                case "connectivity":
                    for (linkName, _, field) in reader.mapping(value, what: "connectivity") {
                        guard known.contains(linkName) else {
                            reader.record(
                                field, "connectivity names link `\(linkName)`, which `links:` does not declare")
                            continue
                        }
                        guard let text = reader.string(field, what: "connectivity") else { continue }
                        if let state = Connectivity(rawValue: text) {
                            step.connectivity[linkName] = state
                        } else {
                            reader.record(
                                field, "unknown connectivity `\(text)`",
                                hint: "one of " + Connectivity.allCases.map(\.rawValue).joined(separator: ", "))
                        }
                    }
                case "power":
                    switch reader.string(value, what: "power") {
                    case "ac"?: step.onBattery = false
                    case "battery"?: step.onBattery = true
                    case let other?:
                        reader.record(
                            value, "unknown power `\(other.prefix(40))`", hint: "`power: ac` or `power: battery`")
                    case nil: break
                    }
                case "battery":
                    if let text = reader.string(value, what: "battery") {
                        let number = text.hasSuffix("%") ? String(text.dropLast()) : text
                        if let percent = Double(number), percent.isFinite, (0...100).contains(percent) {
                            step.batteryPercent = percent
                        } else {
                            reader.record(
                                value, "battery must be a percentage from 0 to 100, not `\(text.prefix(40))`",
                                hint: "e.g. `battery: 18%`")
                        }
                    }
                case "profile":
                    if let text = reader.string(value, what: "profile") {
                        if ["power-saver", "balanced", "performance"].contains(text) {
                            step.profile = text
                        } else {
                            reader.record(
                                value, "unknown power profile `\(text.prefix(40))`",
                                hint: "power-saver, balanced or performance")
                        }
                    }
                case "portal":
                    for (linkName, _, field) in reader.mapping(value, what: "portal") {
                        guard known.contains(linkName) else {
                            reader.record(field, "portal names link `\(linkName)`, which `links:` does not declare")
                            continue
                        }
                        guard let text = reader.string(field, what: "portal") else { continue }
                        if text == "none" || text.isEmpty {
                            step.portals[linkName] = ""
                        } else if text.hasPrefix("http://") || text.hasPrefix("https://"), text.count <= 2048 {
                            step.portals[linkName] = text
                        } else {
                            reader.record(
                                field, "portal `\(text.prefix(60))` is not an http:// or https:// URL",
                                hint: "e.g. `portal: { wlan0: http://10.0.0.1/login }`, or `none` to clear it")
                        }
                    }
                default: break
                }
            }
            if !sawAt {
                reader.record(item, "a step has no `at:` time", hint: "add `at: 5s`")
            }
            upLinks.formUnion(step.up)
            upLinks.subtract(step.down)
            if let primary = step.primary, !upLinks.contains(primary) {
                reader.record(
                    primaryNode, "primary `\(primary)` is down at this step",
                    hint: "list it under `up:` in this or an earlier step")
            }
            previousAt = max(previousAt, step.at)
            steps.append(step)
        }
        if steps.isEmpty { reader.record(node, "steps is empty") }
        return steps
    }
}
