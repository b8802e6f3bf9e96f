#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The text of a configuration file (policy or scenario): a regular file of at most `maxBytes`, in valid
/// UTF-8. A bad byte is reported at its `file:line:column`, never replaced, so what the parser reads is
/// what the file says.
public enum ConfigText {
    /// The largest configuration file read: 1 MiB. The shipped policies are under 4 KiB.
    public static let maxBytes = 1 << 20

    /// Reads `path` whole. Nil when the file cannot be opened or read (the caller says how to fix the path);
    /// a `ConfigIssue` when it is not a regular file, is larger than `maxBytes` or is not UTF-8.
    /// `directories`: a directory of such files may be named instead (said in the hint for anything else).
    public static func read(_ path: String, maxBytes: Int = ConfigText.maxBytes, directories: Bool = true)
        throws(ConfigIssue) -> String?
    {
        // O_NONBLOCK: a FIFO named like a policy file must not hang the reader; it is refused below.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw ConfigIssue(
                file: path, line: 1, column: 1, message: "not a regular file",
                hint: directories ? "point at a .yaml file or a directory of them" : "point at a .yaml file")
        }
        try checkSize(Int64(info.st_size), file: path, maxBytes: maxBytes)
        // Read at most one byte past the cap, in case the file grew after fstat.
        var bytes = [UInt8](repeating: 0, count: min(Int(info.st_size), maxBytes) + 1)
        var count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { buffer in
                Glibc.read(fd, buffer.baseAddress! + count, buffer.count - count)
            }
            if got < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if got == 0 { break }
            count += got
        }
        try checkSize(Int64(count), file: path, maxBytes: maxBytes)
        return try decode(bytes[..<count], file: path)
    }

    /// An issue when `size` bytes are more than `maxBytes`.
    public static func checkSize(_ size: Int64, file: String, maxBytes: Int = ConfigText.maxBytes) throws(ConfigIssue) {
        guard size > Int64(maxBytes) else { return }
        throw ConfigIssue(
            file: file, line: 1, column: 1,
            message: "the file is \(size) bytes; configuration files may be at most \(maxBytes) bytes "
                + "(\(Units.formatBytes(Int64(maxBytes))))",
            hint: "split it into drop-in files in a policy directory, or remove what is not needed")
    }

    /// The bytes as a String, or an issue at the line and column (counted in characters, from 1) of the
    /// first byte that is not UTF-8.
    public static func decode(_ bytes: some Collection<UInt8>, file: String) throws(ConfigIssue) -> String {
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var line = 1
        var column = 1
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let encoded):
                offset += encoded.count
                if encoded.count == 1, encoded.first == 0x0A {
                    line += 1
                    column = 1
                } else {
                    column += 1
                }
            case .error(let length):
                let start = bytes.index(bytes.startIndex, offsetBy: offset)
                let bad = bytes[start...].prefix(max(length, 1)).map { "0x" + String($0, radix: 16, uppercase: true) }
                throw ConfigIssue(
                    file: file, line: line, column: column,
                    message: "the file is not valid UTF-8: byte \(bad.joined(separator: " ")) at offset \(offset)",
                    hint: "save the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8`)")
            case .emptyInput:
                return String(decoding: bytes, as: UTF8.self)
            }
        }
    }
}
