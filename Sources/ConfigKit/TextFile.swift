#if canImport(Glibc)
import Glibc
#endif

/// Reads a small system text file whole (sysfs attributes, networkd leases); nil when unreadable.
/// Invalid UTF-8 is replaced. Configuration files are read with `ConfigText.read`, which refuses it.
public func readTextFile(_ path: String) -> String? {
    guard let handle = fopen(path, "rb") else { return nil }
    defer { fclose(handle) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    while true {
        let count = fread(&buffer, 1, buffer.count, handle)
        if count > 0 { bytes.append(contentsOf: buffer[0..<count]) }
        if count < buffer.count { break }
    }
    if ferror(handle) != 0 { return nil }
    return String(decoding: bytes, as: UTF8.self)
}
