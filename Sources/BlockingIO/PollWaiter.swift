#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What the body of a `PollThread` is given: it waits on its descriptors (and the wake pipe) and yields
/// what it read. Used from the body's thread only.
public final class PollWaiter<Element: Sendable>: Sendable {
    let wake: WakePipe
    private let deliver: @Sendable (Element) -> Bool

    init(wake: WakePipe, deliver: @escaping @Sendable (Element) -> Bool) {
        self.wake = wake
        self.deliver = deliver
    }

    /// Whether the consumer went away: the body should return.
    public var isStopped: Bool { wake.isStopped }

    /// Delivers an element to the stream; false when the consumer is gone (the body should return).
    @discardableResult
    public func yield(_ element: Element) -> Bool {
        deliver(element) && !isStopped
    }

    /// Blocks until one of `descriptors` is ready, `timeout` passes (nil: no timeout), or the consumer goes
    /// away, whichever comes first. An interrupted `poll` (EINTR) is retried with the time left.
    public func wait(for descriptors: [PollDescriptor], timeout: Duration? = nil) throws(PollError) -> PollWake {
        var fds = descriptors.map { pollfd(fd: $0.fd, events: $0.events, revents: 0) }
        fds.append(pollfd(fd: wake.readEnd, events: Int16(POLLIN), revents: 0))
        let deadline = timeout.map { ContinuousClock.now + $0 }
        while true {
            if wake.isStopped { return .stopped }
            var milliseconds: Int32 = -1
            if let deadline {
                let left = ContinuousClock.now.duration(to: deadline)
                milliseconds = left <= .zero ? 0 : Self.milliseconds(roundingUp: left)
            }
            for index in fds.indices { fds[index].revents = 0 }
            let ready = poll(&fds, nfds_t(fds.count), milliseconds)
            if ready < 0 {
                if errno == EINTR { continue }
                throw PollError(.poll, errno: errno)
            }
            if wake.isStopped || fds[descriptors.count].revents != 0 { return .stopped }
            if ready == 0 { return .timedOut }
            return .ready(fds.prefix(descriptors.count).map(\.revents))
        }
    }

    /// Sleeps for `duration` unless the consumer goes away first; true when it did (the body should return).
    public func sleep(for duration: Duration) -> Bool {
        (try? wait(for: [], timeout: duration)).map { $0 == .stopped } ?? isStopped
    }

    /// Whole milliseconds, rounded up so a wait never ends before its time; at most `Int32.max`.
    static func milliseconds(roundingUp duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return Int32.max }
        let part = (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: whole.addingReportingOverflow(part).overflow ? Int64.max : whole + part)
    }
}
