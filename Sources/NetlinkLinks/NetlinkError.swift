import CNetlink

/// Every error of the netlink backend. The message says what to check.
public struct NetlinkError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable, Hashable {
        case socket
        case subscribe
        case dump
        case namespace
        /// Netlink kept failing after every reopen: the monitor gave up (a daemon exits for a restart).
        case gaveUp
        /// A failure a test injected (`NetlinkFaults`).
        case injected
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// Builds an error from a libnl return code.
    static func libnl(_ code: Code, _ what: String, _ result: Int32) -> NetlinkError {
        let text = String(cString: nl_geterror(result))
        return NetlinkError(
            code, "\(what) failed: \(text) (is this Linux with rtnetlink, and may this process open netlink sockets?)")
    }

    public var description: String { message }
}
