import ArgumentParser

/// Bounds on numbers given on the command line, checked before any arithmetic uses them: a `--speed` of
/// `inf` or `1e300` would otherwise overflow a duration and trap.
enum ArgumentLimits {
    /// Replay speeds from 1/100 to 1000 times real time.
    static let speed: ClosedRange<Double> = 0.01...1000
    /// Timeouts up to a week.
    static let timeoutSeconds: ClosedRange<Double> = 0.001...604_800
    /// The generated file of `demo` and `serve`: at most 64 GiB (its sha256 is computed up front).
    static let generatedBytes: ClosedRange<Int64> = 1...(64 << 30)

    static func checkSpeed(_ speed: Double) throws {
        guard speed.isFinite, speed > 0 else { throw ValidationError("--speed must be a finite number greater than 0") }
        guard self.speed.contains(speed) else {
            throw ValidationError("--speed must be from \(self.speed.lowerBound) to \(Int(self.speed.upperBound))")
        }
    }

    static func checkTimeout(_ seconds: Double?) throws {
        guard let seconds else { return }
        guard seconds.isFinite, timeoutSeconds.contains(seconds) else {
            throw ValidationError("--timeout must be a number of seconds greater than 0 and at most 604800 (a week)")
        }
    }

    static func checkGenerated(_ bytes: Int64?, option: String, text: String) throws {
        guard let bytes, generatedBytes.contains(bytes) else {
            throw ValidationError("\(option) \(text) must be a size from 1 byte to 64GiB (e.g. 64MiB)")
        }
    }
}
