import Foundation
import Synchronization

/// A pipe whose read end a loop thread polls next to its socket: `stop()` (from the stream's termination)
/// makes it readable, so the thread wakes and ends without a timeout.
final class StopPipe: Sendable {
    let readEnd: Int32
    private let writeEnd: Int32
    private let stopped = Atomic<Bool>(false)

    /// Nil when no pipe can be made (out of descriptors).
    init?() {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return nil }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        }
        readEnd = fds[0]
        writeEnd = fds[1]
    }

    var isStopped: Bool { stopped.load(ordering: .acquiring) }

    func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }
}
