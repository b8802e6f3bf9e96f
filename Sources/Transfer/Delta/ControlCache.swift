#if canImport(Glibc)
import Glibc
#endif

/// The control file of a delta download in progress, kept beside its partial file with the ETag it came
/// with: a resumed run asks `If-None-Match` and reads it from here on a 304. A file that is not the
/// download's own (`OutputDirectory.openOwn`) or not in this form is ignored.
enum ControlCache {
    static let magic = "meterwise-zsync-cache 1\n"

    struct Entry {
        var etag: String
        var bytes: [UInt8]
    }

    static func read(_ directory: OutputDirectory, _ name: String) -> Entry? {
        guard case .own(let fd) = directory.openOwn(name, writable: false) else { return nil }
        defer { close(fd) }
        guard let data = FileIO.readAll(fd: fd, limit: DeltaRun.maxControlBytes + 2048),
            data.starts(with: Array(magic.utf8))
        else { return nil }
        let rest = data.dropFirst(magic.utf8.count)
        guard let newline = rest.firstIndex(of: 0x0A), newline - rest.startIndex <= 1024,
            let etag = String(validating: rest[..<newline], as: UTF8.self), !etag.isEmpty
        else { return nil }
        return Entry(etag: etag, bytes: Array(rest[(newline + 1)...]))
    }

    /// Writes the cache (a new file renamed over the old one); a failure only costs the next run a download
    /// of the control file.
    static func write(_ directory: OutputDirectory, _ name: String, etag: String, bytes: [UInt8]) {
        guard !etag.utf8.contains(0x0A), etag.utf8.count <= 1024 else { return }
        let temporary = name + ".tmp"
        try? directory.remove(temporary)
        guard let fd = try? directory.createIfAbsent(temporary, mode: 0o600) else { return }
        let content = Array(magic.utf8) + Array(etag.utf8) + [0x0A] + bytes
        let written = content.withUnsafeBytes { raw -> Bool in
            (try? FileIO.pwriteAll(fd: fd, raw, at: 0, what: "write the control file's copy")) != nil
        }
        close(fd)
        if written {
            try? directory.rename(temporary, to: name, replace: true)
        } else {
            try? directory.remove(temporary)
        }
    }
}
