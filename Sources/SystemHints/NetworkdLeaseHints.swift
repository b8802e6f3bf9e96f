import BlockingIO
import ConfigKit
import Foundation
import Links
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Hints from systemd-networkd's DHCP leases, event-driven: inotify on the lease directory; every change
/// re-reads the (few, small) lease files. Without networkd (no directory) it yields empty hints once and
/// waits for nothing — no polling.
public struct NetworkdLeaseHints: LinkHintSource {
    let directory: String
    let logger: Logger

    public init(directory: String = NetworkdLease.directory, logger: Logger = Logger(label: "meterwise.hints")) {
        self.directory = directory
        self.logger = logger
    }

    public func hints() -> AsyncStream<LinkHints> {
        let directory = self.directory
        return PollThread.stream(named: "mw-networkd", bufferingPolicy: .bufferingNewest(1)) { waiter in
            let watch = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
            defer { if watch >= 0 { close(watch) } }
            let added =
                watch >= 0
                ? inotify_add_watch(
                    watch, directory, UInt32(IN_CREATE | IN_DELETE | IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM))
                : -1
            var last = Self.readLeases(directory)
            waiter.yield(last)
            guard added >= 0 else { return }  // no networkd here: nothing will change
            var buffer = [UInt8](repeating: 0, count: 4096)
            while case .ready = (try? waiter.wait(for: [PollDescriptor(watch)])) ?? .stopped {
                while Glibc.read(watch, &buffer, buffer.count) > 0 {}
                let now = Self.readLeases(directory)
                if now != last {
                    last = now
                    waiter.yield(now)
                }
            }
        }
    }

    /// The hints of every lease file now, by interface name (files are named by interface index).
    static func readLeases(_ directory: String) -> LinkHints {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return .none }
        var byName: [String: LinkHint] = [:]
        var leases = 0
        for file in names.prefix(1024) {
            guard let index = UInt32(file) else { continue }
            leases += 1
            guard let text = readTextFile(directory + "/" + file),
                let hint = NetworkdLease.hint(lease: String(text.prefix(64 << 10)))
            else { continue }
            var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
            guard if_indextoname(index, &name) != nil else { continue }
            byName[String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)] = hint
        }
        // networkd counts as running once it holds a lease: an empty directory says nothing.
        return LinkHints(byName: byName, sources: leases > 0 ? ["networkd"] : [])
    }
}
