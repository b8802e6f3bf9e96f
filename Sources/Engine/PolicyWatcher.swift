import Foundation
import Logging
import Policy
import Synchronization

/// Tells when a policy file or directory changes, with inotify (no polling): a dedicated thread blocks
/// in `read` on the inotify descriptor and feeds an AsyncStream.
public struct PolicyWatcher: Sendable {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    /// One element per burst of changes, until the consuming task is cancelled.
    public func changes() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
        let watched = exists && isDirectory.boolValue ? path : (path as NSString).deletingLastPathComponent
        let fd = inotify_init1(Int32(IN_CLOEXEC))
        guard fd >= 0, inotify_add_watch(fd, watched.isEmpty ? "." : watched,
                                         UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM)) >= 0
        else {
            if fd >= 0 { close(fd) }
            continuation.finish()
            return stream
        }
        var pipeFDs: [Int32] = [0, 0]
        _ = pipe(&pipeFDs)
        let wakeRead = pipeFDs[0], wakeWrite = pipeFDs[1]
        continuation.onTermination = { _ in
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)
        }
        let thread = Thread {
            defer {
                close(fd)
                close(wakeRead)
                close(wakeWrite)
            }
            var buffer = [UInt8](repeating: 0, count: 4096)
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            while true {
                fds[0].revents = 0
                fds[1].revents = 0
                guard poll(&fds, 2, -1) >= 0 || errno == EINTR else { return }
                if fds[1].revents != 0 { return }
                if fds[0].revents != 0 {
                    _ = read(fd, &buffer, buffer.count)
                    continuation.yield()
                }
            }
        }
        thread.name = "meterwise-policy-watch"
        thread.start()
        return stream
    }
}
