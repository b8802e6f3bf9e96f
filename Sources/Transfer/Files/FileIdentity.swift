import CFileCalls

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Whose rights a download's file operations use. The daemon runs as root for other users: it creates,
/// opens, renames and removes a user's files *as that user* — the calling thread's file-system uid, gid
/// and groups are switched around each operation — so the kernel checks the user's permissions (ACLs
/// included) and every file it creates belongs to the user. Nil (the default) is the process's own rights.
public struct FileIdentity: Sendable, Hashable, CustomStringConvertible {
    public var uid: UInt32
    public var gid: UInt32
    /// Supplementary groups (without them the thread would keep the daemon's own, root's, groups).
    public var groups: [UInt32]

    public init(uid: UInt32, gid: UInt32, groups: [UInt32]) {
        self.uid = uid
        self.gid = gid
        self.groups = groups
    }

    /// A user as they log in: `gid` and the groups the group database gives the user's name (only `gid`
    /// when the uid has no name).
    public static func user(uid: UInt32, gid: UInt32) -> FileIdentity {
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else {
            return FileIdentity(uid: uid, gid: gid, groups: [gid])
        }
        var count: Int32 = 64
        var groups = [gid_t](repeating: 0, count: Int(count))
        if getgrouplist(name, gid, &groups, &count) < 0 {
            groups = [gid_t](repeating: 0, count: Int(min(max(count, 0), 65536)))
            guard getgrouplist(name, gid, &groups, &count) >= 0 else {
                return FileIdentity(uid: uid, gid: gid, groups: [gid])
            }
        }
        return FileIdentity(uid: uid, gid: gid, groups: Array(groups.prefix(Int(max(count, 0)))))
    }

    public var description: String { "uid \(uid)" }

    /// Whether this is the process itself, so no switch is needed.
    var isProcess: Bool { uid == geteuid() && gid == getegid() }

    /// Runs `body` on the calling thread with this identity's file-system credentials and restores the
    /// thread's own before returning. `body` is synchronous, so nothing else runs on the thread meanwhile.
    /// Fails when the process may not switch (a daemon without CAP_SETUID and CAP_SETGID acting for
    /// another user).
    public func perform<T>(_ body: () throws(TransferError) -> T) throws(TransferError) -> T {
        if isProcess { return try body() }
        let own = Self.threadGroups()
        let switched = switchThread()
        defer { restoreThread(groups: own) }
        guard switched else {
            throw TransferError(
                .permission,
                "Meterwise cannot act as uid \(uid) here (it needs CAP_SETUID and CAP_SETGID to create files as the user who asked); run it as that user, or give the service those capabilities as packaging/meterwise.service does."
            )
        }
        return try body()
    }

    private func switchThread() -> Bool {
        let list = groups.isEmpty ? [gid] : groups
        guard mw_thread_setgroups(list.count, list) == 0 else { return false }
        _ = mw_thread_setfsgid(gid)
        _ = mw_thread_setfsuid(uid)
        // setfsuid/setfsgid return the previous value and never fail loudly: ask again to see what holds.
        return UInt32(bitPattern: mw_thread_setfsuid(uid)) == uid && UInt32(bitPattern: mw_thread_setfsgid(gid)) == gid
    }

    private func restoreThread(groups: [gid_t]) {
        _ = mw_thread_setfsuid(geteuid())
        _ = mw_thread_setgroups(groups.count, groups)
        _ = mw_thread_setfsgid(getegid())
    }

    private static func threadGroups() -> [gid_t] {
        let count = getgroups(0, nil)
        var groups = [gid_t](repeating: 0, count: Int(max(count, 0)))
        let got = getgroups(count, &groups)
        return Array(groups.prefix(Int(max(got, 0))))
    }
}

extension Optional where Wrapped == FileIdentity {
    /// Runs `body` with this identity, or with the process's own rights when nil.
    func perform<T>(_ body: () throws(TransferError) -> T) throws(TransferError) -> T {
        guard let identity = self else { return try body() }
        return try identity.perform(body)
    }

    /// The uid files must belong to for this identity.
    var ownerUID: UInt32 { self?.uid ?? geteuid() }
}
