import ConfigKit

/// `defaults.keep_free`: how much of a job's filesystem stays free, whatever the jobs want. A size, or a
/// percentage of the filesystem.
public enum KeepFree: Sendable, Hashable {
    case bytes(Int64)
    /// Hundredths of a percent (`12.5%` is 1250), so the value stays exact and hashable.
    case basisPoints(Int64)

    /// Parses `16MiB` or `10%` (0–100, up to two decimals); nil when malformed.
    public static func parse(_ text: String) -> KeepFree? {
        let trimmed = text.strippingSpaces()
        if trimmed.hasSuffix("%") {
            let number = String(trimmed.dropLast()).strippingSpaces()
            let parts = number.split(separator: ".", omittingEmptySubsequences: false)
            guard (1...2).contains(parts.count), let whole = Int64(parts[0]), (0...100).contains(whole) else {
                return nil
            }
            var fraction: Int64 = 0
            if parts.count == 2 {
                guard (1...2).contains(parts[1].count), parts[1].allSatisfy(\.isASCII), let digits = Int64(parts[1])
                else { return nil }
                fraction = parts[1].count == 1 ? digits * 10 : digits
            }
            let points = whole * 100 + fraction
            return points <= 10_000 ? .basisPoints(points) : nil
        }
        if case .value(let value) = Units.readBytes(trimmed) { return .bytes(value) }
        return nil
    }

    /// The bytes kept free on a filesystem of `size` bytes.
    public func bytes(ofFilesystem size: Int64) -> Int64 {
        switch self {
        case .bytes(let value): return value
        case .basisPoints(let points): return Int64((Double(max(0, size)) * Double(points) / 10_000).rounded(.up))
        }
    }
}

/// The free space of the filesystem a job writes to, as the engine reads it (`statvfs`) at a decision.
public struct SpaceFacts: Sendable, Hashable {
    /// The job's directory, as shown to the user.
    public var path: String
    /// Bytes free for an unprivileged writer (`f_bavail`).
    public var free: Int64
    /// The filesystem's size.
    public var size: Int64
    /// Bytes this job still has to write (0 when its size is unknown).
    public var needed: Int64
    /// Bytes other running jobs on the same filesystem still have to write.
    public var reserved: Int64

    public init(path: String, free: Int64, size: Int64, needed: Int64, reserved: Int64) {
        self.path = path
        self.free = free
        self.size = size
        self.needed = needed
        self.reserved = reserved
    }
}

/// A job never takes its filesystem below `keep_free`: it waits instead, with the numbers. Pure.
public enum SpaceGate {
    /// Why the job may not write now, or nil when it may: e.g. `needs 1.2 GiB more free space on /srv (800
    /// MiB free, 2 GiB kept free; statvfs)`.
    public static func problem(_ space: SpaceFacts, keepFree: KeepFree) -> String? {
        let kept = keepFree.bytes(ofFilesystem: space.size)
        let usable = space.free - kept - space.reserved
        let needed = max(0, space.needed)
        guard needed > usable || usable < 0 else { return nil }
        let missing = needed - usable
        var text =
            "needs \(Units.formatBytes(max(1, missing))) more free space on \(space.path) "
            + "(\(Units.formatBytes(space.free)) free, \(Units.formatBytes(kept)) kept free"
        if space.reserved > 0 { text += ", \(Units.formatBytes(space.reserved)) promised to running jobs" }
        return text + "; statvfs); tried again when a job ends and every few seconds"
    }

    /// `decision` paused by a space problem, with it as the first reason; as it is when it moves nothing.
    public static func apply(_ decision: Decision, problem: String) -> Decision {
        guard decision.action != .pause else { return decision }
        var gated = decision
        gated.action = .pause
        gated.rate = nil
        gated.allowedLinks = []
        gated.budgetKey = nil
        gated.heldBy = String(problem.prefix { $0 != "(" }).strippingSpaces()
        gated.reasons = [problem] + decision.reasons
        return gated
    }
}
