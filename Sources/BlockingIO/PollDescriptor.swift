#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A descriptor a `PollWaiter` waits on, and for what (`POLLIN` unless said otherwise).
public struct PollDescriptor: Sendable, Hashable {
    public var fd: Int32
    public var events: Int16

    public init(_ fd: Int32, events: Int16 = Int16(POLLIN)) {
        self.fd = fd
        self.events = events
    }
}

/// Why `PollWaiter.wait` returned.
public enum PollWake: Sendable, Equatable {
    /// Some descriptors are ready: the `revents` of each, in the order they were given (0: not ready).
    case ready([Int16])
    /// The timeout passed first.
    case timedOut
    /// The consumer went away (its task was cancelled, or it dropped the stream): return.
    case stopped
}
