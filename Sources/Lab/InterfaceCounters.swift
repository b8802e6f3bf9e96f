import Foundation

/// Byte counters of a namespace's interfaces, as the kernel counts them (`/sys/class/net/IF/statistics`
/// and `/proc/net/dev` show the same numbers).
///
/// `/sys` shows the namespace of whoever mounted it, so the lab reads `/proc/PID/net/dev` instead: it
/// shows the network namespace of process PID. `read(pid:)` is a plain file read, cheap enough to
/// sample every few milliseconds; `read(in:)` runs `cat /proc/net/dev` inside a namespace.
public struct InterfaceCounters: Sendable, Hashable {
    /// Received and transmitted bytes of one interface.
    public struct Bytes: Sendable, Hashable, Codable {
        public var rx: Int64
        public var tx: Int64
        public init(rx: Int64, tx: Int64) {
            self.rx = rx
            self.tx = tx
        }
    }

    public var interfaces: [String: Bytes]

    public init(interfaces: [String: Bytes]) { self.interfaces = interfaces }

    /// Parses the text of `/proc/net/dev`; lines it does not understand are skipped.
    public static func parse(procNetDev text: String) -> InterfaceCounters {
        var result: [String: Bytes] = [:]
        for line in text.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces)
            let fields = line[line.index(after: colon)...].split(separator: " ")
            guard !name.isEmpty, fields.count >= 9, let rx = Int64(fields[0]), let tx = Int64(fields[8]) else {
                continue
            }
            result[name] = Bytes(rx: rx, tx: tx)
        }
        return InterfaceCounters(interfaces: result)
    }

    /// The counters of the namespace process `pid` is in; nil when the process is gone.
    public static func read(pid: Int32) -> InterfaceCounters? {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/net/dev") else { return nil }
        return parse(procNetDev: String(decoding: data, as: UTF8.self))
    }

    /// The counters inside `namespace`.
    public static func read(in namespace: Netns) throws(LabError) -> InterfaceCounters {
        parse(procNetDev: try namespace.exec(["cat", "/proc/net/dev"]))
    }

    /// What each interface received and sent since `earlier` (interfaces missing from either are left out).
    public func delta(since earlier: InterfaceCounters) -> [String: Bytes] {
        var result: [String: Bytes] = [:]
        for (name, now) in interfaces {
            guard let then = earlier.interfaces[name] else { continue }
            result[name] = Bytes(rx: now.rx - then.rx, tx: now.tx - then.tx)
        }
        return result
    }
}
