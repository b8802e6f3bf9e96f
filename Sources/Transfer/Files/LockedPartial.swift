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

    static func open(_ name: String, in directory: OutputDirectory, sink: AsyncStream<DownloadEvent>.Continuation)
        throws(TransferError) -> LockedPartial
    {
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
        return partial
    }
}
