import CFileCalls

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The directory a download writes into, opened once with the identity's rights and then used only
/// through its descriptor: the partial file, the checkpoint and the final rename work on names inside
/// it, so neither a symlink planted at one of those names nor a directory swapped in for a path
/// component later is ever followed. Every operation runs with the identity's file-system credentials.
final class OutputDirectory: Sendable {
    let fd: Int32
    /// The directory as given, for messages.
    let path: String
    let identity: FileIdentity?

    private init(fd: Int32, path: String, identity: FileIdentity?) {
        self.fd = fd
        self.path = path
        self.identity = identity
    }

    deinit { close(fd) }

    /// Opens the directory that holds `destination` (an absolute or relative path to a file).
    static func open(holding destination: String, identity: FileIdentity?) throws(TransferError) -> OutputDirectory {
        let path = FileIO.directory(of: destination)
        let fd = try identity.perform { () throws(TransferError) -> Int32 in
            // For another user (the daemon), never a name looked up in /proc (`KernelTreeFreePath`).
            var fd: Int32 = -1
            if identity == nil {
                fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            } else {
                switch KernelTreeFreePath.open(path, flags: O_RDONLY | O_DIRECTORY) {
                case .success(let descriptor): fd = descriptor
                case .failure(.procfs):
                    throw TransferError(.invalidURL, "\(path) leads into /proc; save it in a folder of your own.")
                case .failure(.errno(let code)): errno = code
                }
            }
            guard fd >= 0 else {
                let code = errno
                if code == EACCES || code == EPERM {
                    throw TransferError(
                        .permission,
                        "\(path) is not reachable by \(identity.map { "uid \($0.uid)" } ?? "you") (\(String(cString: strerror(code)))); choose a directory that user may write to."
                    )
                }
                throw FileIO.error("open the directory \(path)")
            }
            return fd
        }
        return OutputDirectory(fd: fd, path: path, identity: identity)
    }

    /// Runs `body` with the identity's rights.
    func perform<T>(_ body: () throws(TransferError) -> T) throws(TransferError) -> T {
        try identity.perform(body)
    }

    /// Fails with the reason unless the identity may create and rename files here.
    func checkWritable() throws(TransferError) {
        try perform { () throws(TransferError) in
            var code: Int32 = 0
            if mw_access_as_thread(fd, ".", W_OK | X_OK) != 0 {
                code = errno
                // faccessat2 missing (old kernel) or filtered (some container seccomp profiles answer EPERM):
                // ask the kernel by making an unnamed file, which leaves nothing behind.
                if code == ENOSYS || code == EPERM {
                    let probe = mw_open_unnamed(fd)
                    if probe >= 0 {
                        close(probe)
                        code = 0
                    } else {
                        code = errno == EOPNOTSUPP || errno == EISDIR ? 0 : errno
                    }
                }
            }
            guard code != 0 else { return }
            if code == EACCES || code == EPERM || code == EROFS {
                throw TransferError(
                    .permission,
                    "\(path) is not writable by \(identity.map { "uid \($0.uid)" } ?? "you") (\(String(cString: strerror(code)))); choose a directory that user may write to."
                )
            }
            throw TransferError(.fileSystem, "Could not check \(path): \(String(cString: strerror(code))).")
        }
    }

    /// Whether `name` is, right now, the file `st` describes (the same device and inode, not a symlink).
    func sameFile(_ name: String, _ st: stat) -> Bool {
        (try? perform { () throws(TransferError) -> Bool in
            var now = stat()
            return fstatat(fd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_dev == st.st_dev
                && now.st_ino == st.st_ino
        }) ?? false
    }

    /// Whether anything (a file, a symlink, a directory) has this name.
    func exists(_ name: String) -> Bool {
        (try? perform { () throws(TransferError) -> Bool in
            var st = stat()
            return fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0
        }) ?? false
    }

    /// Creates a new file; fails if the name exists in any form (a planted symlink included).
    func create(_ name: String, mode: mode_t = 0o600) throws(TransferError) -> Int32 {
        guard let fd = try createIfAbsent(name, mode: mode) else {
            throw TransferError(.fileSystem, "Could not create \(display(name)): it exists already.")
        }
        return fd
    }

    /// Creates a new file, or returns nil when the name exists already (in any form).
    func createIfAbsent(_ name: String, mode: mode_t = 0o600) throws(TransferError) -> Int32? {
        try perform { () throws(TransferError) -> Int32? in
            let fd = openat(self.fd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
            if fd < 0 && errno == EEXIST { return nil }
            guard fd >= 0 else { throw FileIO.error("create \(display(name))") }
            return fd
        }
    }

    /// What is at a name the download would reuse.
    enum Existing {
        case missing
        /// A file the identity owns alone: the descriptor, opened without following symlinks.
        case own(Int32)
        /// Something that must not be trusted, and why.
        case untrusted(String)
    }

    /// Opens an existing partial file or checkpoint if it is ours: a regular file (not a symlink), with one
    /// link, owned by the identity's uid and writable by nobody else.
    func openOwn(_ name: String, writable: Bool) -> Existing {
        let result = try? perform { () throws(TransferError) -> Existing in
            let fd = openat(self.fd, name, (writable ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            if fd < 0 {
                switch errno {
                case ENOENT: return .missing
                case ELOOP: return .untrusted("\(display(name)) is a symbolic link")
                default: return .untrusted("\(display(name)) cannot be opened (\(String(cString: strerror(errno))))")
                }
            }
            var st = stat()
            guard fstat(fd, &st) == 0 else {
                close(fd)
                return .untrusted("\(display(name)) cannot be examined")
            }
            if let problem = FileTrust.problem(st, owner: identity.ownerUID) {
                close(fd)
                return .untrusted("\(display(name)) \(problem)")
            }
            return .own(fd)
        }
        return result ?? .untrusted("\(display(name)) cannot be opened as uid \(identity.ownerUID)")
    }

    /// Gives the finished partial file `fd` its final `mode` and renames `partial` to `final`. When the rename
    /// fails (the destination appeared meanwhile) the file is still a partial one: private again, as it was made.
    func publish(_ fd: Int32, _ partial: String, as final: String, mode: mode_t, replace: Bool) throws(TransferError) {
        _ = try? perform { () throws(TransferError) in _ = fchmod(fd, mode) }
        do throws(TransferError) {
            try rename(partial, to: final, replace: replace)
        } catch {
            _ = try? perform { () throws(TransferError) in _ = fchmod(fd, 0o600) }
            throw error
        }
    }

    /// Removes a name (the link itself if it is a symlink); a missing name is fine.
    func remove(_ name: String) throws(TransferError) {
        try perform { () throws(TransferError) in
            guard unlinkat(fd, name, 0) == 0 || errno == ENOENT else { throw FileIO.error("remove \(display(name))") }
        }
    }

    /// Renames within the directory; with `replace` false it fails with `destinationExists` instead of
    /// replacing what appeared at `to`.
    func rename(_ from: String, to: String, replace: Bool) throws(TransferError) {
        try perform { () throws(TransferError) in
            if replace {
                guard renameat(fd, from, fd, to) == 0 else {
                    throw FileIO.error("rename \(display(from)) to \(display(to))")
                }
            } else if mw_rename_noreplace(fd, from, fd, to) != 0 {
                if errno == EEXIST {
                    throw TransferError(
                        .destinationExists,
                        "\(display(to)) appeared during the download; pass --force to overwrite it (the partial file is kept)."
                    )
                }
                throw FileIO.error("rename \(display(from)) to \(display(to))")
            }
        }
    }

    /// fsync of the directory, so renames and removals survive a power cut.
    func sync() {
        fsync(fd)
    }

    func display(_ name: String) -> String {
        path == "/" ? "/" + name : path + "/" + name
    }
}

/// When a file found beside a download may be reused: pure.
enum FileTrust {
    /// Nil when `st` describes a regular file with one link, owned by `owner`, writable by no one else;
    /// otherwise what is wrong with it, as the end of a sentence.
    static func problem(_ st: stat, owner: UInt32) -> String? {
        if (st.st_mode & S_IFMT) != S_IFREG { return "is not a regular file" }
        if st.st_nlink != 1 { return "has \(st.st_nlink) hard links" }
        if st.st_uid != owner { return "belongs to uid \(st.st_uid), not uid \(owner)" }
        if st.st_mode & 0o022 != 0 { return "is writable by other users" }
        return nil
    }
}
