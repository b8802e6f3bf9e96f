import MeterwiseClient
import Transfer

#if canImport(Glibc)
import Glibc
#endif

/// Who asks the daemon, as the kernel vouches for it (SO_PEERCRED of the control connection). A job
/// belongs to the uid that added it: users see and control only their own jobs, root and the daemon's
/// own user see every job, and a job's files are created with its owner's rights.
public struct Asker: Sendable, Hashable, CustomStringConvertible {
    public var uid: UInt32
    public var gid: UInt32

    public init(uid: UInt32, gid: UInt32) {
        self.uid = uid
        self.gid = gid
    }

    /// The daemon's own process (tests, the demo, and jobs stored before owners were recorded).
    public static var process: Asker { Asker(uid: geteuid(), gid: getegid()) }

    /// Root and the daemon's own user see and control every job.
    public var seesEveryJob: Bool { uid == 0 || uid == geteuid() }

    /// Whether this asker may see and control `record`.
    public func owns(_ record: JobRecord) -> Bool {
        owns(ownerUID: record.ownerUID)
    }

    /// Whether this asker may see and control a job added by `ownerUID` (nil: the daemon's own).
    public func owns(ownerUID: UInt32?) -> Bool {
        seesEveryJob || ownerUID == uid
    }

    /// The rights the job's files are written with.
    public var identity: FileIdentity { FileIdentity.user(uid: uid, gid: gid) }

    public var description: String { "uid \(uid)" }
}

extension JobRecord {
    /// Who the job's files are written as: the owner recorded when it was added, or the daemon itself for
    /// jobs from before owners were recorded.
    var owner: Asker {
        guard let uid = ownerUID else { return .process }
        return Asker(uid: uid, gid: ownerGID ?? uid)
    }
}
