import Foundation
import Testing

@testable import Engine

/// The policy watcher reloads for the files the policy is read from, not for whatever else changes in
/// their directory (a download written beside the policy reloaded it on every checkpoint).
@Suite struct PolicyWatcherTests {
    /// One inotify event as the kernel lays it out: wd, mask, cookie, len, then the NUL-padded name.
    static func event(_ name: String, mask: UInt32 = UInt32(IN_CLOSE_WRITE)) -> [UInt8] {
        var padded = Array(name.utf8) + [0]
        while padded.count % 4 != 0 { padded.append(0) }
        var bytes: [UInt8] = []
        for value in [UInt32(1), mask, 0, UInt32(padded.count)] { withUnsafeBytes(of: value) { bytes += $0 } }
        return bytes + padded
    }

    @Test func eventNamesAreReadAndCheckedBeforeUse() {
        let batch = Self.event("out.bin.part") + Self.event("10-site.yaml") + Self.event("x")
        #expect(PolicyWatcher.names(in: batch[...]) == ["out.bin.part", "10-site.yaml", "x"])
        // An overflow: anything may have changed.
        #expect(PolicyWatcher.names(in: Self.event("", mask: UInt32(IN_Q_OVERFLOW))[...]) == nil)
        // A length past the batch, or a cut header: not parsed, so the caller reloads to be safe.
        var lying = Self.event("a.yaml")
        lying[12] = 200
        #expect(PolicyWatcher.names(in: lying[...]) == nil)
        #expect(PolicyWatcher.names(in: Self.event("a.yaml").prefix(10)) == nil)
        #expect(PolicyWatcher.isPolicyName("10-site.yaml") && PolicyWatcher.isPolicyName("a.yml"))
        #expect(!PolicyWatcher.isPolicyName("out.bin.part") && !PolicyWatcher.isPolicyName("a.yaml~"))
    }

    /// A policy file written in the watched directory is seen (the watcher still works end to end).
    @Test func aPolicyFileChangeIsSeen() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mw-watch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let changes = PolicyWatcher(path: directory.path).changes()
        try "version: 1\n".write(to: directory.appendingPathComponent("p.yaml"), atomically: false, encoding: .utf8)
        var iterator = changes.makeAsyncIterator()
        #expect(await iterator.next() != nil)
    }
}
