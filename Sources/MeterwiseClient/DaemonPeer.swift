/// Who answers on a control socket, as the kernel recorded it when the listener called `listen()`
/// (`SO_PEERCRED` of the connected socket). The path a client was given proves nothing: a symlink can be
/// swapped between any check of it and the `connect`; the process at the other end of the connection cannot.
public struct DaemonPeer: Sendable, Hashable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32

    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    /// Nil when `caller` may talk to this listener: a daemon runs as root (the system's) or as the caller
    /// (their own). Otherwise what to tell the caller; nothing has been sent to the listener. Pure.
    public func refusal(caller: UInt32, socket: String) -> String? {
        if uid == 0 || uid == caller { return nil }
        return "the listener on \(ShownText.escaped(socket)) runs as uid \(uid) (pid \(pid)), neither root nor you "
            + "(uid \(caller)): it is not a meterwise daemon to trust, and nothing was sent to it; "
            + "check --socket, $METERWISE_SOCKET and $XDG_RUNTIME_DIR (a directory another user may write to can hold "
            + "a planted socket or symlink)"
    }
}
