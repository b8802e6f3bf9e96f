import Foundation
import Links

// Replaced by the netlink monitor when the foundation issue lands.
//
/// The links of this machine now, read from /sys/class/net: names, operstate, flags and the sysfs facts
/// `LinkClassifier` uses (DEVTYPE from uevent, the wireless directory, the ARPHRD type, the driver).
/// It sees no addresses and no routes, so the snapshot has no default routes and no primary.
func currentLinkSnapshot() async throws -> LinkSnapshot {
    let base = "/sys/class/net"
    let names = try FileManager.default.contentsOfDirectory(atPath: base).sorted()
    var links: [Link] = []
    for name in names {
        let dir = base + "/" + name
        func read(_ file: String) -> String? {
            (try? String(contentsOfFile: dir + "/" + file, encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let uevent = read("uevent") ?? ""
        let devtype = uevent.split(separator: "\n").first { $0.hasPrefix("DEVTYPE=") }.map { String($0.dropFirst(8)) }
        let wireless =
            FileManager.default.fileExists(atPath: dir + "/wireless")
            || FileManager.default.fileExists(atPath: dir + "/phy80211")
        let driver = (try? FileManager.default.destinationOfSymbolicLink(atPath: dir + "/device/driver"))
            .map { URL(fileURLWithPath: $0).lastPathComponent }
        let facts = LinkFacts(
            name: name, devtype: devtype, hasWirelessDirectory: wireless,
            arphrd: read("type").flatMap { Int($0) }, driver: driver)
        let (kind, source) = LinkClassifier.classify(facts)
        let flags = read("flags").flatMap { Int($0.dropFirst(2), radix: 16) } ?? 0
        let operstate = read("operstate") ?? "unknown"
        let up = flags & 0x1 != 0
        let running = up && (flags & 0x40 != 0 || read("carrier") == "1")
        let mac = read("address").flatMap { $0.isEmpty || $0 == "00:00:00:00:00:00" ? nil : $0.lowercased() }
        links.append(
            Link(
                index: read("ifindex").flatMap { Int($0) } ?? 0, name: name, kind: kind, kindSource: source,
                operstate: operstate, up: up, running: running, mtu: read("mtu").flatMap { Int($0) } ?? 1500,
                mac: mac, driver: driver))
    }
    return LinkSnapshot(links: links, defaultRoutes: [])
}
