import CDigests

/// SHA-256 (FIPS 180-4) over bytes given in any number of parts: the whole-file and per-piece checks.
/// A value: a copy carries on from where the original was.
public struct SHA256: Sendable {
    private var context = mw_sha256_ctx()

    public init() { mw_sha256_init(&context) }

    public mutating func update(bufferPointer bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        mw_sha256_update(&context, base, bytes.count)
    }

    public mutating func update(data: some Sequence<UInt8>) {
        if data.withContiguousStorageIfAvailable({ update(bufferPointer: UnsafeRawBufferPointer($0)) }) == nil {
            Array(data).withUnsafeBytes { update(bufferPointer: $0) }
        }
    }

    /// The 32-byte digest of everything given so far; more may still be given after.
    public func finalize() -> [UInt8] {
        var copy = context
        return [UInt8](unsafeUninitializedCapacity: 32) { out, count in
            mw_sha256_final(&copy, out.baseAddress!)
            count = 32
        }
    }

    public static func hash(data: some Sequence<UInt8>) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(data: data)
        return hasher.finalize()
    }
}
