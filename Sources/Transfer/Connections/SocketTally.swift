/// The bytes a set of TCP sockets received, counted once each: every look at a socket (by the kernel's
/// cookie, which names it for its whole life) adds what it received since the last look, and its destroy
/// report adds the rest and forgets it. Pure: the caller asks the kernel (sock_diag) and feeds the figures.
public struct SocketTally: Sendable, Equatable {
    /// The sockets followed: cookie -> bytes already counted.
    public private(set) var counted: [UInt64: UInt64] = [:]

    public init() {}

    /// The cookies of the sockets followed (their end is still to be reported).
    public var cookies: [UInt64] { Array(counted.keys) }

    /// A socket seen alive with `bytesReceived` so far: returns the bytes new since the last look.
    public mutating func seen(cookie: UInt64, bytesReceived: UInt64) -> UInt64 {
        let before = counted[cookie] ?? 0
        // The kernel's figure never goes down; a lower one is not counted twice.
        counted[cookie] = max(before, bytesReceived)
        return bytesReceived > before ? bytesReceived - before : 0
    }

    /// A followed socket's last figure as it was destroyed: returns the bytes new since the last look, and
    /// forgets the socket. A socket never seen is not counted (nothing says it was the command's).
    public mutating func destroyed(cookie: UInt64, bytesReceived: UInt64) -> UInt64 {
        guard let before = counted.removeValue(forKey: cookie) else { return 0 }
        return bytesReceived > before ? bytesReceived - before : 0
    }
}
