/// What a delta download takes from its seeds and what it fetches: pure, from the control file and where
/// the scan found each block (docs/delta.md).
public struct DeltaPlan: Sendable, Equatable {
    /// A run of blocks to copy from a seed into the partial file.
    public struct Copy: Sendable, Equatable {
        /// The seed's number (0 is the partial file itself: nothing to copy).
        public var seed: Int
        /// Where the run starts in the seed.
        public var from: Int64
        /// Where it goes in the target.
        public var to: Int64
        /// Its length in bytes.
        public var length: Int64
    }

    /// Runs to copy from seeds other than the partial file, in target order.
    public var copies: [Copy]
    /// Byte ranges of the target no seed has, coalesced, in order.
    public var missing: [Range<Int64>]
    /// The target's length.
    public var length: Int64

    /// Bytes still to fetch.
    public var bytesToFetch: Int64 { missing.reduce(0) { $0 + Int64($1.count) } }
    /// Bytes the seeds (and the partial file) provide.
    public var bytesReused: Int64 { length - bytesToFetch }

    /// The plan for `control`'s target given `found` (one entry per block: `UInt64.max`, or
    /// (seed << 48) | offset).
    public init(control: ZsyncControl, found: [UInt64]) {
        length = control.length
        var copies: [Copy] = []
        var missing: [Range<Int64>] = []
        for block in 0..<min(found.count, control.blockCount) {
            let range = control.range(ofBlock: block)
            let entry = found[block]
            if entry == .max {
                if let last = missing.last, last.upperBound == range.lowerBound {
                    missing[missing.count - 1] = last.lowerBound..<range.upperBound
                } else {
                    missing.append(range)
                }
                continue
            }
            let seed = Int(entry >> 48)
            guard seed != 0 else { continue }
            let from = Int64(entry & 0xFFFF_FFFF_FFFF)
            let length = Int64(range.count)
            if var last = copies.last, last.seed == seed, last.to + last.length == range.lowerBound,
                last.from + last.length == from
            {
                last.length += length
                copies[copies.count - 1] = last
            } else {
                copies.append(Copy(seed: seed, from: from, to: range.lowerBound, length: length))
            }
        }
        self.copies = copies
        self.missing = missing
    }

    /// The missing ranges grouped into requests: at most `maxRanges` ranges and about `maxBytes` bytes each
    /// (a longer range is cut into pieces of `maxBytes`), in order.
    public func requests(maxRanges: Int, maxBytes: Int64) -> [[Range<Int64>]] {
        let maxRanges = max(1, maxRanges)
        let maxBytes = max(1, maxBytes)
        var out: [[Range<Int64>]] = []
        var current: [Range<Int64>] = []
        var bytes: Int64 = 0
        for range in missing {
            var start = range.lowerBound
            while start < range.upperBound {
                let end = min(range.upperBound, start + maxBytes - bytes)
                current.append(start..<end)
                bytes += end - start
                start = end
                if current.count >= maxRanges || bytes >= maxBytes {
                    out.append(current)
                    current = []
                    bytes = 0
                }
            }
        }
        if !current.isEmpty { out.append(current) }
        return out
    }

    /// The `Range` header asking for `ranges`.
    public static func rangeHeader(_ ranges: [Range<Int64>]) -> String {
        "bytes=" + ranges.map { "\($0.lowerBound)-\($0.upperBound - 1)" }.joined(separator: ",")
    }
}
