import Crypto
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An object the range server serves: its bytes (generated, in memory or from a file) and validators.
///
/// Generated content is a deterministic pseudo-random stream from a seed, readable at any offset, so a
/// 64 MiB object needs no 64 MiB array.
public struct RangeContent: Sendable {
    /// Where the bytes come from.
    public enum Source: Sendable {
        /// splitmix64 of (seed + word index), little-endian, truncated to `size`.
        case generated(seed: UInt64)
        /// Bytes in memory.
        case bytes([UInt8])
        /// A file read with `pread` (its size is taken when the content is created).
        case file(path: String)
    }

    /// The bytes' origin.
    public let source: Source
    /// The length.
    public let size: Int64
    /// The strong ETag, quotes included.
    public let etag: String
    /// The Last-Modified value.
    public let lastModified: String

    /// Generated content of `size` bytes; the same seed and size give the same bytes and ETag.
    public static func generated(size: Int64, seed: UInt64) -> RangeContent {
        RangeContent(
            source: .generated(seed: seed), size: size,
            etag: "\"g\(String(seed, radix: 16))-\(String(size, radix: 16))\"",
            lastModified: Self.httpDate(version: Int(seed % 50))
        )
    }

    /// In-memory content.
    public static func bytes(_ bytes: [UInt8], version: Int = 1) -> RangeContent {
        RangeContent(
            source: .bytes(bytes), size: Int64(bytes.count), etag: "\"b\(version)-\(String(bytes.count, radix: 16))\"",
            lastModified: Self.httpDate(version: version)
        )
    }

    /// A file; nil when it cannot be opened.
    public static func file(path: String, version: Int = 1) -> RangeContent? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        let size = Int64(st.st_size)
        return RangeContent(
            source: .file(path: path), size: size,
            etag: "\"f\(version)-\(String(size, radix: 16))-\(st.st_mtim.tv_sec)\"",
            lastModified: Self.httpDate(version: version)
        )
    }

    /// Creates content with explicit validators.
    public init(source: Source, size: Int64, etag: String, lastModified: String) {
        self.source = source
        self.size = size
        self.etag = etag
        self.lastModified = lastModified
    }

    static func httpDate(version: Int) -> String {
        let second = version % 60
        let minute = (version / 60) % 60
        return "Sat, 01 Jan 2022 00:\(minute < 10 ? "0" : "")\(minute):\(second < 10 ? "0" : "")\(second) GMT"
    }

    /// Appends bytes `offset..<offset+count` to `buffer`.
    public func write(offset: Int64, count: Int, into buffer: inout ByteBuffer) {
        let count = Int(max(0, min(Int64(count), size - offset)))
        guard count > 0 else { return }
        switch source {
        case .bytes(let bytes):
            buffer.writeBytes(bytes[Int(offset)..<Int(offset) + count])
        case .generated(let seed):
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { raw in
                Self.generate(seed: seed, offset: offset, into: UnsafeMutableRawBufferPointer(rebasing: raw[0..<count]))
                return count
            }
        case .file(let path):
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return }
            defer { close(fd) }
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { raw in
                var done = 0
                while done < count {
                    let n = pread(fd, raw.baseAddress! + done, count - done, off_t(offset + Int64(done)))
                    if n <= 0 { break }
                    done += n
                }
                return done
            }
        }
    }

    static func splitmix(_ x: UInt64) -> UInt64 {
        var z = x &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    static func generate(seed: UInt64, offset: Int64, into raw: UnsafeMutableRawBufferPointer) {
        var at = 0
        var word = UInt64(offset / 8)
        var skip = Int(offset % 8)
        while at < raw.count {
            var value = splitmix(seed &* 0x1000_0000_01B3 &+ word).littleEndian
            withUnsafeBytes(of: &value) { bytes in
                let take = min(8 - skip, raw.count - at)
                for i in 0..<take { raw[at + i] = bytes[skip + i] }
                at += take
            }
            skip = 0
            word += 1
        }
    }

    /// All bytes (for small content in tests).
    public func allBytes() -> [UInt8] {
        var buffer = ByteBuffer()
        write(offset: 0, count: Int(size), into: &buffer)
        return buffer.readBytes(length: buffer.readableBytes) ?? []
    }

    /// The sha256 of the whole content, lower-case hex (reads it once, 1 MiB at a time).
    public func sha256Hex() -> String {
        var hasher = SHA256()
        var offset: Int64 = 0
        var buffer = ByteBuffer()
        while offset < size {
            buffer.clear()
            let n = Int(min(1 << 20, size - offset))
            write(offset: offset, count: n, into: &buffer)
            buffer.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
            offset += Int64(n)
        }
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for b in hasher.finalize() {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xf)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
