import ConfigKit
import Links
import Yams

/// `networks:` entries: what a link matches and what it sets.
extension PolicyParser {
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
}
