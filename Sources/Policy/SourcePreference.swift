/// A rule's `prefer:` (docs/policy.md, docs/mirrors.md): which of a job's sources take its work while they
/// serve. The others stand by and take over when every preferred source is dropped.
public enum SourcePreference: Sendable, Hashable, CustomStringConvertible {
    /// Sources reached without a router: on the subnet of one of the machine's links (or on the machine).
    case lan
    /// Sources whose host name (or address, as written in the URL) matches one of these globs.
    case hosts([Glob])

    /// Whether `host` (as written in a source's URL: a name, an IPv4 address, or an IPv6 address without
    /// brackets) is one of the listed hosts; always false for `lan`, which needs the source's route. Pure.
    public func listsHost(_ host: String) -> Bool {
        guard case .hosts(let globs) = self else { return false }
        let lower = host.lowercased()
        return globs.contains { $0.matches(lower) }
    }

    public var description: String {
        switch self {
        case .lan: "lan"
        case .hosts(let globs): globs.map(\.pattern).joined(separator: ", ")
        }
    }
}
