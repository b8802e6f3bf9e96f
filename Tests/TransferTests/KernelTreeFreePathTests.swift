import Foundation
import Testing

@testable import Transfer

/// The daemon opens a user's paths without looking a name up in /proc: every way into it is one answer.
@Suite struct KernelTreeFreePathTests {
    static func scratch() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("mw-ktf-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func outcome(_ path: String, flags: Int32 = O_RDONLY) -> KernelTreeFreePath.Failure? {
        switch KernelTreeFreePath.open(path, flags: flags) {
        case .success(let fd):
            close(fd)
            return nil
        case .failure(let failure):
            return failure
        }
    }

    @Test func everyWayIntoProcIsRefusedAlike() throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let fm = FileManager.default
        try fm.createSymbolicLink(atPath: dir.appendingPathComponent("fds").path, withDestinationPath: "/proc/self/fd")
        try fm.createSymbolicLink(
            atPath: dir.appendingPathComponent("rel").path, withDestinationPath: "../../../../../../../proc/self")
        try fm.createSymbolicLink(
            atPath: dir.appendingPathComponent("open").path, withDestinationPath: "/proc/self/fd/0")
        try fm.createSymbolicLink(
            atPath: dir.appendingPathComponent("closed").path, withDestinationPath: "/proc/self/fd/987654")
        for path in [
            "/proc/self/fd/0", "/proc/self/fd/987654", "/proc", "/proc/", "/dev/fd/0", "/dev/stdin",
            "//proc/self/environ",
            dir.path + "/fds/0", dir.path + "/fds/987654", dir.path + "/rel/environ", dir.path + "/open",
            dir.path + "/closed", dir.path + "/fds/0/x", "/tmp/../proc/self/status",
        ] {
            #expect(Self.outcome(path) == .procfs, "\(path)")
        }
        #expect(Self.outcome(dir.path + "/fds", flags: O_RDONLY | O_DIRECTORY) == .procfs)
    }

    @Test func ordinaryPathsOpenAsTheKernelWould() throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let fm = FileManager.default
        let file = dir.appendingPathComponent("ca.pem").path
        try "pem\n".write(toFile: file, atomically: false, encoding: .utf8)
        try fm.createDirectory(atPath: dir.appendingPathComponent("sub").path, withIntermediateDirectories: true)
        try fm.createSymbolicLink(atPath: dir.appendingPathComponent("abs").path, withDestinationPath: file)
        try fm.createSymbolicLink(atPath: dir.appendingPathComponent("sub/rel").path, withDestinationPath: "../abs")
        try fm.createSymbolicLink(atPath: dir.appendingPathComponent("dirlink").path, withDestinationPath: "sub")
        try fm.createSymbolicLink(atPath: dir.appendingPathComponent("loop").path, withDestinationPath: "loop")
        for path in [
            file, dir.path + "/abs", dir.path + "/sub/rel", dir.path + "/dirlink/rel", dir.path + "/sub/../ca.pem",
            dir.path + "/./ca.pem", dir.path + "//ca.pem",
        ] {
            let fd = try #require(try? KernelTreeFreePath.open(path, flags: O_RDONLY).get(), "\(path)")
            var buffer = [UInt8](repeating: 0, count: 8)
            #expect(read(fd, &buffer, 8) == 4, "\(path)")
            close(fd)
        }
        #expect(Self.outcome(dir.path + "/dirlink", flags: O_RDONLY | O_DIRECTORY) == nil)
        #expect(Self.outcome("/", flags: O_RDONLY | O_DIRECTORY) == nil)
        #expect(Self.outcome(dir.path + "/missing") == .errno(ENOENT))
        #expect(Self.outcome(dir.path + "/missing/x") == .errno(ENOENT))
        #expect(Self.outcome(file + "/x") == .errno(ENOTDIR))
        #expect(Self.outcome(dir.path + "/loop") == .errno(ELOOP))
        #expect(Self.outcome("relative/path") == .errno(EINVAL))
    }
}
