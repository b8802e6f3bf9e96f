import CFileCalls

#if canImport(Glibc)
import Glibc
#endif

/// Opens a path a user gave the daemon without ever looking a name up inside procfs: the path is walked one
/// component at a time from `/` (`openat` with `mw_o_path() | O_NOFOLLOW`; symlinks read and followed by this
/// walk, at most 40), and each directory is checked with `fstatfs` before the next name is looked up in it.
/// `/proc/self/fd/N` opened by the daemon is the daemon's own descriptor N, and whether N is open changed
/// the answer (an oracle of the daemon's open files); here any path that leads into `/proc` — as written,
/// through `/dev/fd`, or through the user's own symlink — has one answer, before any name in `/proc` is
/// looked up. Runs with the calling thread's file-system identity (the asker's, in the daemon).
enum KernelTreeFreePath {
    enum Failure: Error, Equatable {
        /// The path leads into procfs.
        case procfs
        /// An errno from a lookup or the final open.
        case errno(Int32)
    }

    static let maxLinks = 40

    /// Opens `path` (absolute) with `flags` (`O_NOFOLLOW` is added for the last component; a symlink there is
    /// followed by the walk). A descriptor, or why not.
    static func open(_ path: String, flags: Int32) -> Result<Int32, Failure> {
        guard path.hasPrefix("/") else { return .failure(.errno(EINVAL)) }
        var pending = Array(path.split(separator: "/").map(String.init).reversed())
        var directory = Glibc.open("/", mw_o_path() | O_DIRECTORY | O_CLOEXEC)
        guard directory >= 0 else { return .failure(.errno(errno)) }
        defer { close(directory) }
        var links = 0
        while let name = pending.popLast() {
            if name.isEmpty || name == "." { continue }
            if isProc(directory) { return .failure(.procfs) }
            let last = !pending.contains { !$0.isEmpty && $0 != "." }
            if last {
                let fd = openat(directory, name, flags | O_NOFOLLOW | O_CLOEXEC)
                if fd >= 0 {
                    if isProc(fd) {
                        close(fd)
                        return .failure(.procfs)
                    }
                    return .success(fd)
                }
                let code = errno
                // ELOOP: a symlink (or, with O_DIRECTORY, maybe not): read it and walk its target.
                guard code == ELOOP || code == ENOTDIR, let target = readLink(directory, name) else {
                    return .failure(.errno(code))
                }
                links += 1
                guard links <= maxLinks else { return .failure(.errno(ELOOP)) }
                guard follow(target, directory: &directory, pending: &pending) else { return .failure(.errno(errno)) }
                continue
            }
            let next = openat(directory, name, mw_o_path() | O_NOFOLLOW | O_CLOEXEC)
            guard next >= 0 else { return .failure(.errno(errno)) }
            var info = stat()
            guard fstat(next, &info) == 0 else {
                let code = errno
                close(next)
                return .failure(.errno(code))
            }
            if info.st_mode & S_IFMT == S_IFLNK {
                let target = readLink(next, "")
                close(next)
                guard let target else { return .failure(.errno(errno)) }
                links += 1
                guard links <= maxLinks else { return .failure(.errno(ELOOP)) }
                guard follow(target, directory: &directory, pending: &pending) else { return .failure(.errno(errno)) }
                continue
            }
            guard info.st_mode & S_IFMT == S_IFDIR else {
                close(next)
                return .failure(.errno(ENOTDIR))
            }
            close(directory)
            directory = next
        }
        // The path names `/` (or only `.` parts): open it as asked.
        if isProc(directory) { return .failure(.procfs) }
        let fd = openat(directory, ".", flags | O_CLOEXEC)
        return fd >= 0 ? .success(fd) : .failure(.errno(errno))
    }

    /// Puts a symlink's target in front of what is left; an absolute one starts again from `/`.
    private static func follow(_ target: String, directory: inout Int32, pending: inout [String]) -> Bool {
        pending += target.split(separator: "/").map(String.init).reversed()
        guard target.hasPrefix("/") else { return true }
        let root = Glibc.open("/", mw_o_path() | O_DIRECTORY | O_CLOEXEC)
        guard root >= 0 else { return false }
        close(directory)
        directory = root
        return true
    }

    /// Whether `fd` is on procfs; one that cannot be asked counts as procfs (refused).
    private static func isProc(_ fd: Int32) -> Bool {
        mw_is_procfs(fd) != 0
    }

    /// The target of the symlink `name` in `directory` (`""`: the descriptor is the symlink itself).
    private static func readLink(_ directory: Int32, _ name: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlinkat(directory, name, &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
