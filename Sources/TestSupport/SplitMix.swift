import Foundation

/// A small seeded random generator (SplitMix64): a test that draws random values prints its seed, and the
/// same seed replays the same draws.
public struct SplitMix: RandomNumberGenerator {
    var state: UInt64

    public init(seed: UInt64) { state = seed }

    /// The seed from the environment variable `name` when set (to replay a failure), else a fresh one.
    public static func seed(from name: String) -> UInt64 {
        if let text = ProcessInfo.processInfo.environment[name], let seed = UInt64(text) { return seed }
        return UInt64.random(in: 0...UInt64.max)
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
