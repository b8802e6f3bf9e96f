/// What a lab's claim file says: the lab's process id and the namespaces it creates, one per line
/// (`pid 1234`, `namespace mwlab-dev-1234-99`). Parsed strictly: it names things a sweep deletes.
public struct LabClaimRecord: Sendable, Hashable {
    public var pid: Int32
    public var namespaces: [String]

    public init(pid: Int32, namespaces: [String]) {
        self.pid = pid
        self.namespaces = namespaces
    }

    /// The file's text.
    public var text: String {
        "pid \(pid)\n" + namespaces.map { "namespace \($0)\n" }.joined()
    }

    /// A record from a file's text; nil when any line is not one of the two kinds or a name is not a plain
    /// namespace name (a claim file is never trusted to name a path or an option).
    public init?(parsing text: String) {
        var pid: Int32?
        var namespaces: [String] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { return nil }
            switch parts[0] {
            case "pid":
                guard pid == nil, let value = Int32(parts[1]), value > 0 else { return nil }
                pid = value
            case "namespace":
                guard Self.isNamespaceName(parts[1]) else { return nil }
                namespaces.append(parts[1])
            default:
                return nil
            }
        }
        guard let pid else { return nil }
        self.init(pid: pid, namespaces: namespaces)
    }

    /// Whether every name is a plain namespace name.
    public var isValid: Bool { pid > 0 && namespaces.allSatisfy(Self.isNamespaceName) }

    /// 1 to 200 of letters, digits, `.`, `_`, `-`, not starting with `-` or `.`.
    public static func isNamespaceName(_ name: String) -> Bool {
        guard (1...200).contains(name.utf8.count), let first = name.utf8.first, first != UInt8(ascii: "-"),
            first != UInt8(ascii: ".")
        else { return false }
        return name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: ".")
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }
}
