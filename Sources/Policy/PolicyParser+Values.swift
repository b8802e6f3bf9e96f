import ConfigKit
import Links
import Yams

/// Typed readers of single values: kinds, globs, MACs, subnets, labels, comparisons.
extension PolicyParser {
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

    /// `connectivity: portal` or `connectivity: [portal, limited]`.
    static func connectivities(_ node: Node, reader: inout YAMLReader) -> [Connectivity] {
        var result: [Connectivity] = []
        for item in reader.list(node, what: "connectivity") {
            guard let text = reader.string(item, what: "connectivity") else { continue }
            if let state = Connectivity(rawValue: text) {
                result.append(state)
            } else {
                reader.record(
                    item, "unknown connectivity `\(text)`",
                    hint: "one of " + Connectivity.allCases.map(\.rawValue).joined(separator: ", "))
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
