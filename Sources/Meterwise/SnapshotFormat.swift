import Foundation
import Links
import Policy

/// How `meterwise links` prints snapshots: a table, change lines, or JSON.
enum SnapshotFormat {
    static func json(_ snapshot: LinkSnapshot, at: Date? = nil) -> String {
        encode(LinkSnapshotDocument(snapshot, at: at.map(timestamp), verdict: NetworkClass.builtInVerdict))
    }

    static func encode(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// The table; `scenario` names the file the links are replayed from, if any.
    static func table(_ snapshot: LinkSnapshot, scenario: String? = nil) -> String {
        let primary = snapshot.primary?.name
        var rows = [[" ", "NAME", "KIND", "WHY", "METERED", "STATE", "ADDRESSES"]]
        for link in snapshot.links {
            var state = link.isUsable ? "up" : (link.up ? "up, no carrier" : "down")
            if let ssid = link.ssid { state += ", ssid \(ssid)" }
            if link.roaming == true { state += ", roaming" }
            if let connectivity = link.connectivity, connectivity != .unknown {
                state += ", connectivity \(connectivity.rawValue)"
                if let source = link.connectivitySource { state += " (\(source))" }
            }
            if let portal = link.portalURL { state += ", portal \(portal)" }
            rows.append([
                link.name == primary ? "*" : " ", link.name, link.kind.rawValue, link.kindSource,
                metered(link), state, link.addresses.joined(separator: " "),
            ])
        }
        var text = render(rows)
        text += "\n"
        if snapshot.defaultRoutes.isEmpty {
            text += "\nno default route"
        } else {
            text += "\ndefault routes:"
            for route in snapshot.defaultRoutes {
                let via = route.gateway.map { " via \($0)" } ?? ""
                text += "\n  \(route.family.rawValue) dev \(route.link)\(via) metric \(route.metric)"
            }
        }
        text += "\nprimary uplink: " + (primary.map { "\($0) (*)" } ?? "none")
        if snapshot.power != .unknown {
            text += "\npower: \(snapshot.power.summary) (\(snapshot.power.sources.joined(separator: ", ")))"
        }
        text += "\nhint sources: "
        if let scenario {
            text += "none (replaying \(scenario): links and metered hints are the scenario's)"
        } else {
            text +=
                snapshot.hintSources.isEmpty
                ? "none running (the kernel's facts only)" : snapshot.hintSources.joined(separator: ", ")
        }
        return text
    }

    /// `yes (networkmanager: guess-yes)`, `no (kind ethernet)`: the built-in verdict and where it came from
    /// (policy `networks:` rules may still change it; `policy explain` shows the final word).
    static func metered(_ link: Link) -> String {
        let verdict = NetworkClass.builtInVerdict(for: link)
        return "\(verdict.metered ? "yes" : "no") (\(verdict.source))"
    }

    static func changeLine(_ snapshot: LinkSnapshot, previous: LinkSnapshot?, at: Date) -> String {
        let primary = snapshot.primary.map { "\($0.name) (\($0.kind.rawValue))" } ?? "none"
        let states = snapshot.links.filter { $0.kind != .loopback }.map { "\($0.name)=\($0.isUsable ? "up" : "down")" }
        var line = "\(timestamp(at)) primary=\(primary) " + states.joined(separator: " ")
        if let previous, previous.primary?.name != snapshot.primary?.name {
            line += "  [primary \(previous.primary?.name ?? "none") -> \(snapshot.primary?.name ?? "none")]"
        }
        return line
    }

    static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    static func render(_ rows: [[String]]) -> String {
        let widths = (0..<rows[0].count).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}
