#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why a `PollWaiter` could not wait: `poll` itself failed (not an interruption, which is retried).
public struct PollError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable {
        /// `poll(2)` failed: `errno` says why (EINVAL: too many descriptors; ENOMEM: out of memory).
        case poll
    }

    public var code: Code
    /// The C library's error number.
    public var errno: Int32

    public init(_ code: Code, errno: Int32) {
        self.code = code
        self.errno = errno
    }

    public var message: String {
        "poll failed: \(String(cString: strerror(errno))) (errno \(errno)); the source stops, and its owner says how it goes on"
    }

    public var description: String { message }
}
