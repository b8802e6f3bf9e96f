import Foundation

/// The JSON contract (docs/api.md): every key Meterwise writes is snake_case. `violations` walks a
/// decoded JSON value and lists every key that is not, with where it was found.
public enum SnakeCase {
    /// Keys whose values are maps keyed by data (link names, link kinds, budget keys), not by field names:
    /// their own keys are checked, their children's are not.
    public static let dataMaps: Set<String> = [
        "bytes_by_link", "bytes_by_kind", "interfaces", "engine_bytes", "usage", "link_bytes", "budgets",
    ]

    /// `a_b2_c` yes; `aB`, `a-b`, `_a`, `a__b`, `A` no.
    public static func isSnakeCase(_ key: String) -> Bool {
        guard let first = key.unicodeScalars.first, ("a"..."z").contains(first) else { return false }
        guard !key.hasSuffix("_"), !key.contains("__") else { return false }
        return key.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
    }

    /// Every key in `json` (from `JSONSerialization`) that is not snake_case, as `path.key`.
    public static func violations(in json: Any, path: String = "$") -> [String] {
        if let object = json as? [String: Any] {
            var found: [String] = []
            for (key, value) in object.sorted(by: { $0.key < $1.key }) {
                if !isSnakeCase(key) { found.append("\(path).\(key)") }
                if dataMaps.contains(key) {
                    // Keys are data; the values beneath them are still checked.
                    if let map = value as? [String: Any] {
                        for (name, inner) in map { found += violations(in: inner, path: "\(path).\(key)[\(name)]") }
                    }
                } else {
                    found += violations(in: value, path: "\(path).\(key)")
                }
            }
            return found
        }
        if let array = json as? [Any] {
            return array.enumerated().flatMap { violations(in: $0.element, path: "\(path)[\($0.offset)]") }
        }
        return []
    }

    /// Parses each non-empty line of `text` as JSON and lists the violations; a line that is not JSON is
    /// itself a violation (a `--json` output prints nothing else).
    public static func violations(inLines text: String, source: String) -> [String] {
        text.split(separator: "\n").flatMap { line -> [String] in
            guard let json = try? JSONSerialization.jsonObject(with: Data(line.utf8), options: [.fragmentsAllowed])
            else {
                return ["\(source): not JSON: \(line.prefix(120))"]
            }
            return violations(in: json, path: source)
        }
    }
}
