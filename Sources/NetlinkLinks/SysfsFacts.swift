import ConfigKit
import Links

#if canImport(Glibc)
import Glibc
#endif

/// Reads the sysfs facts classification needs for one link: DEVTYPE, wireless dirs, driver.
/// sysfs shows the network namespace it was mounted in (`ip netns exec` remounts it), so a monitor
/// that entered a namespace on its own thread does not read it.
enum SysfsFacts {
    static func read(name: String, into facts: inout LinkFacts, root: String = "/sys/class/net") {
        let base = "\(root)/\(name)"
        if let uevent = readTextFile("\(base)/uevent") {
            for line in uevent.split(separator: "\n") where line.hasPrefix("DEVTYPE=") {
                facts.devtype = String(line.dropFirst("DEVTYPE=".count))
            }
        }
        facts.hasWirelessDirectory = access("\(base)/wireless", F_OK) == 0 || access("\(base)/phy80211", F_OK) == 0
        facts.driver = readLinkBasename("\(base)/device/driver")
    }

    static func readLinkBasename(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        let target = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return target.split(separator: "/").last.map(String.init)
    }
}
