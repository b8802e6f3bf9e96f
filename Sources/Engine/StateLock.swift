import CFileCalls
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One daemon per state directory: an advisory lock (`flock`) on `STATE/daemon.lock`, held for the
/// process's life. The directory is created private (0700); the lock file holds the owner's pid for the
/// message a second daemon prints.
public final class StateLock: Sendable {
    public let directory: String
    private let fd: Int32

    private init(directory: String, fd: Int32) {
        self.directory = directory
        self.fd = fd
    }

    deinit { close(fd) }

    /// Takes the lock or fails at once, saying which process holds it.
    public static func acquire(_ directory: String) throws(EngineError) -> StateLock {
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            do {
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700])
            } catch {
                throw EngineError(
                    .store, "cannot create the state directory \(directory): choose another --state", cause: error)
            }
        }
        // An existing state directory of ours is made private too; one of another user is refused.
        var st = stat()
        guard lstat(directory, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR, st.st_uid == geteuid() else {
            throw EngineError(
                .store, "the state directory \(directory) is not a directory of this user: choose another --state")
        }
        if st.st_mode & 0o077 != 0 { _ = chmod(directory, 0o700) }
        let path = directory + "/daemon.lock"
        let fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw EngineError(
                .store, "cannot open \(path) (\(String(cString: strerror(errno)))): check the state directory")
        }
        guard mw_try_lock(fd) == 0 else {
            var buffer = [UInt8](repeating: 0, count: 32)
            let n = pread(fd, &buffer, buffer.count, 0)
            close(fd)
            let pid =
                n > 0
                ? String(decoding: buffer[0..<n], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) : "?"
            throw EngineError(
                .store,
                "another meterwise daemon (pid \(pid)) uses the state directory \(directory): stop it, or give this one another --state and --socket"
            )
        }
        _ = ftruncate(fd, 0)
        let text = Array("\(getpid())\n".utf8)
        _ = pwrite(fd, text, text.count, 0)
        _ = fchmod(fd, 0o600)
        return StateLock(directory: directory, fd: fd)
    }
}
