import CDigests

/// SHA-1 (FIPS 180-4), for the formats that still name it: zsync's whole-file check and a Metalink's `sha-1`.
/// Not for anything that must resist a forger; SHA-256 is used wherever a format allows the choice.
public struct SHA1: Sendable {
    private var context = mw_sha1_ctx()

    public init() { mw_sha1_init(&context) }

    public mutating func update(bufferPointer bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        mw_sha1_update(&context, base, bytes.count)
    }

    public mutating func update(data: some Sequence<UInt8>) {
        if data.withContiguousStorageIfAvailable({ update(bufferPointer: UnsafeRawBufferPointer($0)) }) == nil {
            Array(data).withUnsafeBytes { update(bufferPointer: $0) }
        }
    }

    /// The 20-byte digest of everything given so far; more may still be given after.
    public func finalize() -> [UInt8] {
        var copy = context
        return [UInt8](unsafeUninitializedCapacity: 20) { out, count in
            mw_sha1_final(&copy, out.baseAddress!)
            count = 20
        }
    }

    public static func hash(data: some Sequence<UInt8>) -> [UInt8] {
        var hasher = SHA1()
        hasher.update(data: data)
        return hasher.finalize()
    }
}
