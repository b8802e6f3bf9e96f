import ConfigKit
import Foundation
import Links

@testable import Policy

/// Small builders for links, snapshots, instants and policies used across the policy tests.
enum Fixtures {
    static let utc = TimeZone(identifier: "UTC")!
    static let berlin = TimeZone(identifier: "Europe/Berlin")!

    static func link(
        _ name: String, _ kind: LinkKind, index: Int = 2, up: Bool = true, ssid: String? = nil,
        hint: Bool? = nil, mac: String? = nil, ipv4: [String] = [], driver: String? = nil
    ) -> Link {
        Link(
            index: index, name: name, kind: kind, kindSource: "test", operstate: up ? "up" : "down", up: up,
            running: up, mac: mac, ipv4: ipv4, driver: driver, ssid: ssid, meteredHint: hint)
    }

    /// A snapshot where every link that is up has a default route; `primary` gets the lowest metric.
    static func snapshot(_ links: [Link], primary: String?) -> LinkSnapshot {
        var routes: [DefaultRoute] = []
        for (position, link) in links.enumerated() where link.isUsable {
            routes.append(
                DefaultRoute(
                    family: .ipv4, linkIndex: link.index, link: link.name,
                    metric: link.name == primary ? 100 : 1000 + position))
        }
        return LinkSnapshot(links: links, defaultRoutes: routes)
    }

    static let wlan = link(
        "wlan0", .wlan, index: 2, ssid: "HomeNet", mac: "aa:bb:cc:00:00:01", ipv4: ["192.168.1.20/24"],
        driver: "iwlwifi")
    static let wwan = link(
        "wwan0", .wwan, index: 3, mac: "02:00:00:00:00:03", ipv4: ["10.64.1.2/30"], driver: "qmi_wwan")
    static let eth = link(
        "eth0", .ethernet, index: 4, mac: "52:54:00:12:34:56", ipv4: ["10.0.0.5/24"], driver: "e1000e")

    static var onWifi: LinkSnapshot { snapshot([wlan], primary: "wlan0") }
    static var onCellular: LinkSnapshot { snapshot([wwan], primary: "wwan0") }
    static var both: LinkSnapshot { snapshot([wlan, wwan], primary: "wwan0") }
    static var none: LinkSnapshot { snapshot([link("wlan0", .wlan, up: false)], primary: nil) }

    /// `2026-11-22T02:30:00Z` style instants.
    static func date(_ text: String) -> Date {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        guard let d = f.date(from: text) else { fatalError("bad test date \(text)") }
        return d
    }

    static let noon = date("2026-11-18T12:00:00Z")  // a Wednesday

    static func policy(_ yaml: String, file: String = "test.yaml") throws -> PolicySet {
        try PolicySet.parse(files: [(file, "version: 1\n" + yaml)])
    }

    /// The issues a policy text gives (empty when it loads).
    static func issues(_ yaml: String, file: String = "bad.yaml") -> [ConfigIssue] {
        do {
            _ = try PolicySet.parse(files: [(file, yaml)])
            return []
        } catch {
            return error.issues
        }
    }

    /// The repository root, found from this file's path.
    static func repoRoot(_ file: String = #filePath) -> String {
        var url = URL(fileURLWithPath: file)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }
}
