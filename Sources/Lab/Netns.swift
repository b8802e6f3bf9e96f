import Foundation

/// A network namespace this process created, removed by `delete()` (call it in a `defer`).
public struct Netns: Sendable, Hashable {
    public let name: String

    /// The namespace named `name` (it may or may not exist).
    public init(name: String) {
        self.name = name
    }

    /// The path to hand to `setns`, e.g. `/run/netns/NAME`.
    public var path: String { "/run/netns/\(name)" }

    /// Why namespaces cannot be used here, or nil when they can (root, `ip` present, netns works).
    public static func unavailableReason() -> String? { probed }

    private static let probed: String? = probe()

    private static func probe() -> String? {
        if getuid() != 0 { return "network namespaces need root (running as uid \(getuid()))" }
        if !Command.exists("ip") { return "the `ip` command (iproute2) is not installed" }
        let probe = "mwprobe\(getpid())-\(UInt32.random(in: 0...0xFFFFFF))"
        do {
            try Command.run(["ip", "netns", "add", probe])
            try Command.run(["ip", "netns", "del", probe])
        } catch {
            return "cannot create a network namespace: \(error)"
        }
        return nil
    }

    /// Creates a namespace with a unique name built from `prefix`, with `lo` up.
    public static func create(prefix: String) throws(LabError) -> Netns {
        try create(name: uniqueName(prefix: prefix))
    }

    /// A name no other namespace has: `PREFIX-PID-RANDOM`.
    public static func uniqueName(prefix: String) -> String {
        "\(prefix)-\(getpid())-\(UInt32.random(in: 0...0xFFFFFF))"
    }

    /// Creates the namespace `name` (from `uniqueName`), with `lo` up.
    public static func create(name: String) throws(LabError) -> Netns {
        try Command.run(["ip", "netns", "add", name])
        let namespace = Netns(name: name)
        try namespace.ip("link", "set", "lo", "up")
        return namespace
    }

    /// Runs `ip ARGS` inside the namespace.
    @discardableResult
    public func ip(_ arguments: String...) throws(LabError) -> String {
        try Command.run(["ip", "-n", name] + arguments)
    }

    /// Runs `ip ARGS` inside the namespace, with the arguments as an array.
    @discardableResult
    public func ip(_ arguments: [String]) throws(LabError) -> String {
        try Command.run(["ip", "-n", name] + arguments)
    }

    /// Runs any command inside the namespace (`ip netns exec`).
    @discardableResult
    public func exec(_ arguments: [String], allowFailure: Bool = false) throws(LabError) -> String {
        try Command.run(["ip", "netns", "exec", name] + arguments, allowFailure: allowFailure)
    }

    /// Whether a namespace named `name` exists (`ip netns list`).
    public static func exists(_ name: String) throws(LabError) -> Bool {
        try Command.run(["ip", "netns", "list"]).split(separator: "\n").contains { line in
            line.split(separator: " ").first.map(String.init) == name
        }
    }

    /// The processes inside the namespace (`ip netns pids`).
    public func pids() throws(LabError) -> [Int32] {
        try Command.run(["ip", "netns", "pids", name]).split(whereSeparator: \.isWhitespace).compactMap { Int32($0) }
    }

    /// Deletes the namespace; links inside it go with it. Never throws, so it is safe in `defer`.
    public func delete() {
        _ = try? Command.run(["ip", "netns", "del", name], allowFailure: true)
    }
}
