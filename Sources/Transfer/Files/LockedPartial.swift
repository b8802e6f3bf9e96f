import CFileCalls

#if canImport(Glibc)
import Glibc
#endif

/// The partial file of a delta or a download from several sources, opened for writing and locked for this
/// run: the one there when it is the identity's own, else a new one (a symlink or another user's file is
/// removed with a warning, never opened).
struct LockedPartial {
    var fd: Int32
    /// The file is new: nothing in it to resume.
    var created: Bool

    static func open(
        _ name: String, of names: OutputNames, in directory: OutputDirectory,
        sink: AsyncStream<DownloadEvent>.Continuation
    ) throws(TransferError) -> LockedPartial {
        var partial: LockedPartial?
        switch directory.openOwn(name, writable: true) {
        case .own(let fd): partial = LockedPartial(fd: fd, created: false)
        case .missing: break
        case .untrusted(let why):
            sink.yield(.warning("Not using the partial file: \(why). It is removed."))
            try directory.remove(name)
        }
        if partial == nil {
            guard let fd = try directory.createIfAbsent(name, mode: 0o600) else {
                throw TransferError(
                    .outputBusy,
                    "\(directory.display(name)) appeared meanwhile; another program writes there. Choose another path with -o."
                )
            }
            partial = LockedPartial(fd: fd, created: true)
        }
        guard let partial, mw_try_lock(partial.fd) == 0 else {
            if let partial { close(partial.fd) }
            throw TransferError(
                .outputBusy,
                "Another download is writing \(directory.display(name)) now; wait for it to finish or choose another path with -o."
            )
        }
        do throws(TransferError) {
            try stillLinked(partial.fd, name, in: directory)
            try noOtherWriter(of: names, besides: name, in: directory)
        } catch {
            // Only the file this run made, while the name is still it.
            if partial.created, isLinked(partial.fd, name, in: directory) { try? directory.remove(name) }
            close(partial.fd)
            throw error
        }
        return partial
    }

    /// Throws `outputBusy` when the file locked as `fd` is no longer the one at `name`: another program removed
    /// or replaced it between the open and the lock, so writing it would be lost.
    static func stillLinked(_ fd: Int32, _ name: String, in directory: OutputDirectory) throws(TransferError) {
        guard isLinked(fd, name, in: directory) else {
            throw TransferError(
                .outputBusy,
                "\(directory.display(name)) was removed or replaced while this download opened it; another program writes there. Run the command again, or choose another path with -o."
            )
        }
    }

    /// Whether a run holds the lock of the partial file `name` now.
    static func isHeld(_ name: String, in directory: OutputDirectory) -> Bool {
        guard case .own(let fd) = directory.openOwn(name, writable: false) else { return false }
        defer { close(fd) }
        guard flock(fd, LOCK_SH | LOCK_NB) == 0 else { return true }
        _ = mw_unlock(fd)
        return false
    }

    /// Whether `name` is, right now, the file open as `fd`.
    static func isLinked(_ fd: Int32, _ name: String, in directory: OutputDirectory) -> Bool {
        var st = stat()
        return fstat(fd, &st) == 0 && st.st_nlink > 0 && directory.sameFile(name, st)
    }

    /// Throws `outputBusy` when another run holds the lock of another kind's partial file of the same output
    /// (a single-source `.part`, a `.mirror-part`, a `.delta-part`): two downloads of one file must not both
    /// run because one of them has several sources. Called with `own` locked first, so of two runs that start
    /// together at least one sees the other.
    static func noOtherWriter(of names: OutputNames, besides own: String, in directory: OutputDirectory)
        throws(TransferError)
    {
        for other in names.partials where other != own && isHeld(other, in: directory) {
            throw TransferError(
                .outputBusy,
                "Another download of \(directory.display(names.final)) is running (it writes \(directory.display(other))); wait for it to finish or choose another path with -o."
            )
        }
    }
}
