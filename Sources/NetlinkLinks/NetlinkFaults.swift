/// Where a test makes netlink fail, without patching libnl: the monitor asks `fault(at:)` before each
/// open of its sockets, each dump and each receive, and throws a returned error as if libnl had failed
/// there. The shipped monitor has none.
public struct NetlinkFaults: Sendable {
    /// The places the monitor can fail.
    public enum Point: Sendable, Hashable, CaseIterable {
        /// Opening and subscribing the sockets.
        case open
        /// Reading links, addresses and default routes.
        case dump
        /// Reading events after `poll` said the socket is readable.
        case receive
    }

    /// Returns the error to throw at `point`, or nil to go on.
    public var fault: @Sendable (_ point: Point) -> NetlinkError?

    public init(fault: @escaping @Sendable (_ point: Point) -> NetlinkError?) {
        self.fault = fault
    }

    /// No faults: the kernel's answers only.
    public static let none = NetlinkFaults { _ in nil }
}
