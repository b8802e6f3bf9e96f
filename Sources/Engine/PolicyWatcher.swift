import BlockingIO
import Foundation
import Logging
import Policy

/// Tells when a policy file or directory changes, with inotify (no polling): a `PollThread` waits on the
/// inotify descriptor and feeds an AsyncStream.
public struct PolicyWatcher: Sendable {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    /// One element per burst of changes, until the consuming task is cancelled. Ends at once when the path
    /// cannot be watched (no such directory, out of inotify watches).
    public func changes() -> AsyncStream<Void> {
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
        let watchesDirectory = exists && isDirectory.boolValue
        let watched = watchesDirectory ? path : (path as NSString).deletingLastPathComponent
        // Only names the policy is read from count: downloads written beside a policy file change nothing.
        let fileName = (path as NSString).lastPathComponent
        let counts: @Sendable (String) -> Bool = { name in
            watchesDirectory ? PolicyWatcher.isPolicyName(name) : name == fileName
        }
        // Opened here, so that a change made as soon as `changes()` returns is seen.
        let fd = inotify_init1(Int32(IN_CLOEXEC))
        guard fd >= 0,
            inotify_add_watch(
                fd, watched.isEmpty ? "." : watched,
                UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM)) >= 0
        else {
            if fd >= 0 { close(fd) }
            return AsyncStream { $0.finish() }
        }
        return PollThread.stream(named: "mw-policy-watch", bufferingPolicy: .bufferingNewest(1)) { waiter in
            defer { close(fd) }
            var buffer = [UInt8](repeating: 0, count: 4096)
            while case .ready = (try? waiter.wait(for: [PollDescriptor(fd)])) ?? .stopped {
                let count = read(fd, &buffer, buffer.count)
                // An overflow or an unreadable batch: reload to be safe.
                let names = count > 0 ? Self.names(in: buffer.prefix(count)) : nil
                if names.map({ $0.contains(where: counts) }) ?? true { waiter.yield(()) }
            }
        }
    }

    /// Whether a directory's file is read as policy (`*.yaml`, `*.yml`; PolicySet.load), or is one of its
    /// editors' renames (`x.yaml~` is not, `x.yaml` moved into place is).
    static func isPolicyName(_ name: String) -> Bool {
        name.hasSuffix(".yaml") || name.hasSuffix(".yml")
    }

    /// The names in a batch of inotify events; nil for an overflow (anything may have changed) or a batch
    /// that does not parse. Each event is `wd`, `mask`, `cookie`, `len` (4 bytes each), then `len` bytes of
    /// NUL-padded name; every length is checked before it is used.
    static func names(in batch: ArraySlice<UInt8>) -> [String]? {
        var names: [String] = []
        var offset = batch.startIndex
        func u32(_ at: Int) -> UInt32 {
            batch.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at - batch.startIndex, as: UInt32.self) }
        }
        while offset < batch.endIndex {
            guard batch.endIndex - offset >= 16 else { return nil }
            let mask = u32(offset + 4)
            let length = Int(u32(offset + 12))
            guard mask & UInt32(IN_Q_OVERFLOW) == 0, length <= batch.endIndex - offset - 16 else { return nil }
            let bytes = batch[(offset + 16)..<(offset + 16 + length)].prefix { $0 != 0 }
            names.append(String(decoding: bytes, as: UTF8.self))
            offset += 16 + length
        }
        return names
    }
}
