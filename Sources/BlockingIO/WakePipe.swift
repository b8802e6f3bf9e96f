import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The pipe a `PollThread` polls next to its source's descriptors: `stop()` (the consumer went away) makes
/// it readable, so a thread blocked in `poll` wakes at once, without a timeout. Both ends are closed once,
/// by `close()` when the thread ends; a `stop()` after that writes nothing (the descriptor numbers may
/// belong to another file by then).
final class WakePipe: Sendable {
    private struct Ends {
        var read: Int32
        var write: Int32
        var stopped = false
        var closed = false
    }

    private let ends: Mutex<Ends>
    /// The read end, for `poll`; -1 when no pipe could be made (out of descriptors): then a stop is only seen
    /// when the source's own descriptors or a timeout wake the thread.
    let readEnd: Int32

    init() {
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) != 0 { fds = [-1, -1] }
        for fd in fds where fd >= 0 {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        }
        readEnd = fds[0]
        ends = Mutex(Ends(read: fds[0], write: fds[1]))
    }

    var isStopped: Bool { ends.withLock { $0.stopped } }

    /// Wakes the thread for good; more calls change nothing.
    func stop() {
        ends.withLock { ends in
            guard !ends.stopped else { return }
            ends.stopped = true
            guard !ends.closed, ends.write >= 0 else { return }
            var byte: UInt8 = 1
            _ = Glibc.write(ends.write, &byte, 1)
        }
    }

    /// Closes both ends (once): the thread has ended.
    func close() {
        ends.withLock { ends in
            guard !ends.closed else { return }
            ends.closed = true
            if ends.read >= 0 { _ = Glibc.close(ends.read) }
            if ends.write >= 0 { _ = Glibc.close(ends.write) }
        }
    }

    deinit { close() }
}
