import CFileCalls
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The control socket's file: made in a private directory, given its group and mode there (checked, not
/// assumed), then renamed into place — so no one can connect before its permissions hold, and no
/// process-wide umask is touched. A socket another live daemon listens on is never replaced.
struct ControlSocket {
    let path: String
    let group: String?

    /// The mode the socket gets: 0660 with a group, else 0600.
    var mode: mode_t { group == nil ? 0o600 : 0o660 }

    /// Fails unless `path` is free: nothing there, or a socket no one listens on (left by a crash).
    func checkFree() throws(EngineError) {
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        guard (st.st_mode & S_IFMT) == S_IFSOCK else {
            throw EngineError(.socket, "\(path) exists and is not a socket: remove it or choose another --socket")
        }
        if Self.someoneListens(path) {
            throw EngineError(
                .socket, "another daemon listens on \(path): stop it, or choose another --socket and --state")
        }
    }

    /// A private directory beside `path` to bind in.
    func makePrivateDirectory() throws(EngineError) -> String {
        let directory = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw EngineError(
                .socket, "cannot create \(directory) for the control socket: choose another --socket", cause: error)
        }
        var template = Array((directory + "/.meterwise-bind-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw EngineError(
                .socket,
                "cannot create a directory in \(directory) (\(String(cString: strerror(errno)))): choose another --socket"
            )
        }
        return String(cString: made)
    }

    /// Gives the freshly bound socket at `bound` its group and mode, checks that they hold, and renames it
    /// to `path`. Returns the socket's identity (device, inode) to remove only it later.
    func publish(_ bound: String) throws(EngineError) -> (dev_t, ino_t) {
        var wantGroup: gid_t?
        if let group {
            guard let entry = getgrnam(group) else {
                throw EngineError(.socket, "no group \(group): create it or drop --group")
            }
            let gid = entry.pointee.gr_gid
            wantGroup = gid
            guard chown(bound, getuid(), gid) == 0 else {
                throw EngineError(
                    .socket,
                    "cannot give the socket to group \(group) (\(String(cString: strerror(errno)))): run the daemon as root (with CAP_CHOWN) or as a member of \(group), or drop --group"
                )
            }
        }
        guard chmod(bound, mode) == 0 else {
            throw EngineError(.socket, "cannot set the socket's mode (\(String(cString: strerror(errno))))")
        }
        var st = stat()
        guard lstat(bound, &st) == 0 else { throw EngineError(.socket, "the socket vanished while it was set up") }
        if st.st_mode & 0o777 != mode || (wantGroup.map { st.st_gid != $0 } ?? false) {
            throw EngineError(
                .socket,
                "the socket came out \(String(st.st_mode & 0o777, radix: 8)) group \(st.st_gid), not \(String(mode, radix: 8))\(group.map { " group \($0)" } ?? ""): check the daemon's capabilities"
            )
        }
        try checkFree()
        // A stale socket (no one listens) is removed; the new one never replaces anything, so two daemons
        // starting at once cannot take each other's socket.
        var existing = stat()
        if lstat(path, &existing) == 0 { unlink(path) }
        guard mw_rename_noreplace(AT_FDCWD, bound, AT_FDCWD, path) == 0 else {
            if errno == EEXIST {
                throw EngineError(.socket, "another daemon took \(path) just now: stop it, or choose another --socket")
            }
            throw EngineError(
                .socket,
                "cannot move the socket to \(path) (\(String(cString: strerror(errno)))): choose another --socket")
        }
        return (st.st_dev, st.st_ino)
    }

    /// Removes the socket file if it is still the one this daemon made.
    func remove(ifStill identity: (dev_t, ino_t)) {
        var st = stat()
        guard lstat(path, &st) == 0, st.st_dev == identity.0, st.st_ino == identity.1 else { return }
        unlink(path)
    }

    /// Whether a process accepts connections on the Unix socket at `path`.
    static func someoneListens(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return result == 0
    }
}
