#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Reads and writes checkpoints crash-safely, inside the download's directory: a new temp file
/// (O_EXCL, never a planted symlink), fsync, rename over the checkpoint, fsync of the directory.
enum CheckpointFile {
    /// What the checkpoint beside a partial file says.
    enum Found {
        case none
        case checkpoint(Checkpoint)
        /// A file exists that does not decode.
        case unreadable
        /// A file exists that is not ours to trust (a symlink, another user's file), and why.
        case untrusted(String)
    }

    /// The checkpoint `name` in `directory`, if it is ours and decodes.
    static func read(in directory: OutputDirectory, name: String) -> Found {
        switch directory.openOwn(name, writable: false) {
        case .missing: return .none
        case .untrusted(let why): return .untrusted(why)
        case .own(let fd):
            defer { close(fd) }
            guard let data = FileIO.readAll(fd: fd, limit: 64 << 20) else { return .unreadable }
            do {
                return .checkpoint(try Checkpoint.decode(Data(data)))
            } catch {
                return .unreadable
            }
        }
    }

    /// Writes `checkpoint` as `name` in `directory` atomically and durably. The data it describes must be
    /// fsynced first.
    static func write(_ checkpoint: Checkpoint, in directory: OutputDirectory, name: String) throws(TransferError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        let data: Data
        do {
            data = try encoder.encode(checkpoint)
        } catch {
            throw TransferError(.fileSystem, "Could not encode the checkpoint.", cause: error)
        }
        let temp = name + ".tmp"
        // A temp file left by a crash (or planted) is removed, never opened: the new one is created O_EXCL.
        try directory.remove(temp)
        let fd = try directory.create(temp, mode: 0o600)
        defer { close(fd) }
        let failure = data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> TransferError? in
            do throws(TransferError) {
                try FileIO.pwriteAll(fd: fd, raw, at: 0, what: "write the checkpoint \(directory.display(temp))")
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
        guard fsync(fd) == 0 else { throw FileIO.error("fsync the checkpoint \(directory.display(temp))") }
        try directory.rename(temp, to: name, replace: true)
        directory.sync()
    }

    /// Removes the checkpoint and its temp file.
    static func remove(in directory: OutputDirectory, name: String) {
        try? directory.remove(name)
        try? directory.remove(name + ".tmp")
    }
}

/// Thin POSIX helpers.
enum FileIO {
    static func error(_ what: String) -> TransferError {
        let code = errno
        let reason = String(cString: strerror(code))
        return TransferError(
            .fileSystem,
            "Could not \(what): \(reason). Check that the directory exists, is writable and has free space."
        )
    }

    static func pwriteAll(fd: Int32, _ raw: UnsafeRawBufferPointer, at offset: Int64, what: String)
        throws(TransferError)
    {
        var done = 0
        while done < raw.count {
            let n = pwrite(fd, raw.baseAddress! + done, raw.count - done, off_t(offset + Int64(done)))
            if n < 0 {
                if errno == EINTR { continue }
                throw error(what)
            }
            done += n
        }
    }

    /// Reads up to `count` bytes at `offset` into `buffer`; returns bytes read (short at end of file).
    static func preadFully(fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> Int {
        var done = 0
        while done < buffer.count {
            let n = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + Int64(done)))
            if n < 0 {
                if errno == EINTR { continue }
                return done
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    static func readAll(fd: Int32, limit: Int) -> [UInt8]? {
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while out.count < limit {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n < 0, errno == EINTR { continue }
            if n < 0 { return nil }
            if n == 0 { break }
            out.append(contentsOf: chunk[0..<n])
        }
        return out
    }

    static func truncate(fd: Int32, to size: Int64) { _ = ftruncate(fd, off_t(size)) }

    static func size(fd: Int32) -> Int64? {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        return Int64(st.st_size)
    }

    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let dir = String(path[..<slash])
        return dir.isEmpty ? "/" : dir
    }

    /// Bytes available to unprivileged users on the file system holding `directory`, if known.
    static func freeBytes(_ directory: String) -> Int64? {
        var info = statvfs()
        guard statvfs(directory, &info) == 0 else { return nil }
        let (product, overflow) = Int64(clamping: info.f_bavail).multipliedReportingOverflow(
            by: Int64(clamping: info.f_frsize))
        return overflow ? Int64.max : product
    }

    /// The last component of `path`: the name inside `directory(of:)`.
    static func name(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// The process's umask, read without changing it (Linux 4.7+); 022 when unknown.
    static var processUmask: mode_t {
        let fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return 0o022 }
        defer { close(fd) }
        let text = String(decoding: readAll(fd: fd, limit: 1 << 16) ?? [], as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Umask:") }),
            let value = mode_t(String(line.dropFirst(6).filter { !$0.isWhitespace }), radix: 8), value <= 0o777
        else { return 0o022 }
        return value
    }
}

/// The names a download uses inside its directory: the final file, `NAME.part`, `NAME.part.checkpoint`.
struct OutputNames: Sendable {
    let final: String
    var partial: String { final + ".part" }
    var checkpoint: String { final + ".part.checkpoint" }
    /// The partial files a run of each kind writes: one output has one writer, whatever its kind.
    var partials: [String] { [partial, mirrorPartial, deltaPartial] }

    init(destination: String) {
        final = FileIO.name(of: destination)
    }
}
