import CDigests

/// Which block functions the digests use: the CPU's SHA instructions (x86 SHA extensions) or portable C.
public enum DigestInstructions {
    /// True when this CPU's SHA instructions are in use.
    public static var hardware: Bool { mw_digests_hardware() != 0 }

    /// For tests: runs `body` with the portable block functions, whatever the CPU has. Not for concurrent use.
    public static func portable<T>(_ body: () throws -> T) rethrows -> T {
        mw_digests_force_portable(1)
        defer { mw_digests_force_portable(0) }
        return try body()
    }
}
