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

/// Reads and writes checkpoints crash-safely: temp file, fsync, rename, fsync of the directory.
enum CheckpointFile {
    /// The decoded checkpoint; `unreadable` when a file exists that does not decode.
    static func read(path: String) -> (Checkpoint?, unreadable: Bool) {
        guard let data = FileIO.readAll(path: path, limit: 64 << 20) else { return (nil, false) }
        do {
            return (try Checkpoint.decode(Data(data)), false)
        } catch {
            return (nil, true)
        }
    }

    /// Writes `checkpoint` to `path` atomically and durably. The data it describes must be fsynced first.
    static func write(_ checkpoint: Checkpoint, path: String) throws(TransferError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        let data: Data
        do {
            data = try encoder.encode(checkpoint)
        } catch {
            throw TransferError(.fileSystem, "Could not encode the checkpoint.", cause: error)
        }
        let temp = path + ".tmp"
        let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw FileIO.error("create the checkpoint \(temp)") }
        defer { close(fd) }
        let failure = data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> TransferError? in
            do throws(TransferError) {
                try FileIO.pwriteAll(fd: fd, raw, at: 0, what: "write the checkpoint \(temp)")
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
        guard fsync(fd) == 0 else { throw FileIO.error("fsync the checkpoint \(temp)") }
        guard rename(temp, path) == 0 else { throw FileIO.error("rename the checkpoint to \(path)") }
        FileIO.syncDirectory(of: path)
    }

    /// Removes the checkpoint and its temp file.
    static func remove(path: String) {
        unlink(path)
        unlink(path + ".tmp")
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

    static func pwriteAll(fd: Int32, _ raw: UnsafeRawBufferPointer, at offset: Int64, what: String) throws(TransferError) {
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

    static func readAll(path: String, limit: Int) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while out.count < limit {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n < 0, errno == EINTR { continue }
            if n <= 0 { break }
            out.append(contentsOf: chunk[0..<n])
        }
        return out
    }

    static func remove(_ path: String) { unlink(path) }

    static func rename(_ from: String, to: String) -> Bool { Glibc.rename(from, to) == 0 }

    static func truncate(fd: Int32, to size: Int64) { _ = ftruncate(fd, off_t(size)) }

    static func exists(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0
    }

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

    static func syncDirectory(of path: String) {
        let fd = open(directory(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }
}
