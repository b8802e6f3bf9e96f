import Yams

/// Reads a YAML document strictly, collecting every problem with its location instead of stopping at
/// the first. Readers call `mapping(_:allowed:)` to get keys checked against a closed set.
public struct YAMLReader {
    public let file: String
    public private(set) var issues: [ConfigIssue] = []

    public init(file: String) {
        self.file = file
    }

    /// Parses text into a node tree. A syntax error becomes a located issue and returns nil, and so does a
    /// text over `ConfigText.maxBytes`, nested deeper than `YAMLExpansion.maxDepth` or whose aliases
    /// expand past `YAMLExpansion.maxNodes` values: those are refused before Yams builds (and hashes) them.
    public mutating func parse(_ text: String) -> Node? {
        do {
            try ConfigText.checkSize(Int64(text.utf8.count), file: file)
        } catch {
            issues.append(error)
            return nil
        }
        if let excess = YAMLExpansion.check(text) {
            record(line: excess.line, column: excess.column, excess.message, hint: excess.hint)
            return nil
        }
        do {
            guard let node = try Yams.compose(yaml: text) else {
                record(line: 1, column: 1, "the file is empty", hint: "start it with `version: 1`")
                return nil
            }
            return node
        } catch let error as YamlError {
            let (line, column, problem) = Self.locate(error)
            record(
                line: line, column: column, "YAML syntax: \(problem)",
                hint: "check indentation and quoting near this line")
            return nil
        } catch {
            record(line: 1, column: 1, "YAML syntax: \(error)")
            return nil
        }
    }

    static func locate(_ error: YamlError) -> (Int, Int, String) {
        switch error {
        case let .scanner(context, problem, mark, _):
            return (mark.line, mark.column, [context?.text, problem].compactMap { $0 }.joined(separator: " "))
        case let .parser(context, problem, mark, _):
            return (mark.line, mark.column, [context?.text, problem].compactMap { $0 }.joined(separator: " "))
        case let .composer(context, problem, mark, _):
            return (mark.line, mark.column, [context?.text, problem].compactMap { $0 }.joined(separator: " "))
        default:
            return (1, 1, "\(error)")
        }
    }

    /// Records an issue at a node's position.
    public mutating func record(_ node: Node?, _ message: String, hint: String? = nil) {
        record(line: node?.mark?.line ?? 1, column: node?.mark?.column ?? 1, message, hint: hint)
    }

    public mutating func record(line: Int, column: Int, _ message: String, hint: String? = nil) {
        issues.append(ConfigIssue(file: file, line: line, column: column, message: message, hint: hint))
    }

    /// The entries of a mapping as (key, key node, value node), in file order. Keys outside `allowed`
    /// are reported with the list of valid keys; a non-mapping node is reported and gives no entries.
    public mutating func mapping(_ node: Node, what: String, allowed: [String]? = nil) -> [(String, Node, Node)] {
        guard case let .mapping(mapping) = node else {
            record(node, "\(what) must be a mapping (key: value)")
            return []
        }
        var entries: [(String, Node, Node)] = []
        var seen: Set<String> = []
        for (key, value) in mapping {
            guard let name = key.string else {
                record(key, "\(what): keys must be plain names")
                continue
            }
            if let allowed, !allowed.contains(name) {
                record(
                    key, "unknown key `\(name)` in \(what)",
                    hint: "valid keys: " + allowed.joined(separator: ", ") + Self.suggestion(name, allowed))
                continue
            }
            if !seen.insert(name).inserted {
                record(key, "`\(name)` appears twice in \(what)")
                continue
            }
            entries.append((name, key, value))
        }
        return entries
    }

    /// The items of a sequence; a single scalar counts as a one-item list.
    public mutating func list(_ node: Node, what: String) -> [Node] {
        switch node {
        case let .sequence(sequence): return Array(sequence)
        case .scalar: return [node]
        default:
            record(node, "\(what) must be a list")
            return []
        }
    }

    /// A scalar's text, or an issue.
    public mutating func string(_ node: Node, what: String) -> String? {
        guard case let .scalar(scalar) = node else {
            record(node, "\(what) must be a single value")
            return nil
        }
        return scalar.string
    }

    public mutating func strings(_ node: Node, what: String) -> [String] {
        list(node, what: what).compactMap { string($0, what: what) }
    }

    public mutating func bool(_ node: Node, what: String) -> Bool? {
        guard let text = string(node, what: what) else { return nil }
        switch text.lowercased() {
        case "yes", "true", "on": return true
        case "no", "false", "off": return false
        default:
            record(node, "\(what) must be yes or no, not `\(text)`")
            return nil
        }
    }

    /// A whole number within `range`.
    public mutating func int(_ node: Node, what: String, in range: ClosedRange<Int>) -> Int? {
        guard let text = string(node, what: what) else { return nil }
        guard let value = Int(text), range.contains(value) else {
            let digits = text.drop { $0 == "-" || $0 == "+" }
            if !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) {
                record(node, "\(what) must be from \(range.lowerBound) to \(range.upperBound), not `\(text)`")
            } else {
                record(node, "\(what) must be a whole number, not `\(text)`")
            }
            return nil
        }
        return value
    }

    /// A duration no longer than `cap`.
    public mutating func duration(_ node: Node, what: String, atMost cap: Cap<Duration> = .anyDuration) -> Duration? {
        guard let text = string(node, what: what) else { return nil }
        switch Units.readDuration(text) {
        case .value(let value) where value <= cap.value: return value
        case .value, .tooLarge:
            record(
                node, "\(what) must be at most \(cap.text), not `\(text)`",
                hint: "write a duration up to \(cap.text), e.g. 30s, 10m or 1h30m")
        case .malformed:
            record(node, "bad duration `\(text)` for \(what)", hint: Units.durationHint)
        }
        return nil
    }

    /// A size no larger than `cap`.
    public mutating func bytes(_ node: Node, what: String, atMost cap: Cap<Int64> = .anySize) -> Int64? {
        guard let text = string(node, what: what) else { return nil }
        switch Units.readBytes(text) {
        case .value(let value) where value <= cap.value: return value
        case .value, .tooLarge:
            record(
                node, "\(what) must be at most \(cap.text), not `\(text)`",
                hint: "write a size up to \(cap.text), e.g. 500MiB or 20GiB")
        case .malformed:
            record(node, "bad size `\(text)` for \(what)", hint: Units.bytesHint)
        }
        return nil
    }

    /// A rate (bytes per second) no larger than `cap`.
    public mutating func rate(_ node: Node, what: String, atMost cap: Cap<Int64> = .anySize) -> Int64? {
        guard let text = string(node, what: what) else { return nil }
        switch Units.readRate(text) {
        case .value(let value) where value <= cap.value: return value
        case .value, .tooLarge:
            record(
                node, "\(what) must be at most \(cap.text), not `\(text)`",
                hint: "write a rate up to \(cap.text), e.g. 512KiB/s or 10MiB/s")
        case .malformed:
            record(node, "bad rate `\(text)` for \(what)", hint: Units.rateHint)
        }
        return nil
    }

    /// ` (did you mean `x`?)` when a valid key is one edit or so away.
    static func suggestion(_ name: String, _ allowed: [String]) -> String {
        let best = allowed.map { ($0, editDistance(name, $0)) }.min { $0.1 < $1.1 }
        guard let best, best.1 <= max(1, name.count / 3) else { return "" }
        return " (did you mean `\(best.0)`?)"
    }

    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
