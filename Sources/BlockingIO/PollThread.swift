import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A blocking source on a thread of its own, as an `AsyncStream`: the one way Meterwise reads the kernel,
/// the system bus, inotify or a child's exit without holding a thread of the cooperative pool.
///
/// `body` runs on a new thread and waits with its `PollWaiter`, which blocks in `poll(2)` on the body's
/// descriptors and a wake pipe. Cancelling the consuming task, or dropping the stream, writes to the
/// pipe: the waiter returns `.stopped` at once and the body returns. When the body returns (or throws)
/// the pipe is closed, once, and the stream finishes (with the error).
///
///     let changes = PollThread.stream(of: Void.self, named: "meterwise-watch") { waiter in
///         let fd = inotify_init1(IN_CLOEXEC)
///         defer { close(fd) }
///         while case .ready = try waiter.wait(for: [PollDescriptor(fd)]) { ...; waiter.yield(()) }
///     }
public enum PollThread {
    /// A stream of what `body` yields; an error `body` throws ends it.
    public static func throwingStream<Element: Sendable>(
        of type: Element.Type = Element.self, named name: String,
        bufferingPolicy: AsyncThrowingStream<Element, any Error>.Continuation.BufferingPolicy = .unbounded,
        _ body: @escaping @Sendable (PollWaiter<Element>) throws -> Void
    ) -> AsyncThrowingStream<Element, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Element.self, bufferingPolicy: bufferingPolicy)
        let wake = WakePipe()
        continuation.onTermination = { _ in wake.stop() }
        start(named: name, wake: wake, body: body, finish: { continuation.finish(throwing: $0) }) {
            if case .terminated = continuation.yield($0) { false } else { true }
        }
        return stream
    }

    /// A stream of what `body` yields, until it returns.
    public static func stream<Element: Sendable>(
        of type: Element.Type = Element.self, named name: String,
        bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy = .unbounded,
        _ body: @escaping @Sendable (PollWaiter<Element>) -> Void
    ) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: bufferingPolicy)
        let wake = WakePipe()
        continuation.onTermination = { _ in wake.stop() }
        start(named: name, wake: wake, body: body, finish: { _ in continuation.finish() }) {
            if case .terminated = continuation.yield($0) { false } else { true }
        }
        return stream
    }

    /// Runs `body` on a new thread named `name` (its first 15 bytes, the kernel's limit, where `ps -L`,
    /// `top -H` and /proc/PID/task/TID/comm show it); then closes the wake pipe and calls `finish`.
    private static func start<Element: Sendable>(
        named name: String, wake: WakePipe, body: @escaping @Sendable (PollWaiter<Element>) throws -> Void,
        finish: @escaping @Sendable ((any Error)?) -> Void, deliver: @escaping @Sendable (Element) -> Bool
    ) {
        let waiter = PollWaiter(wake: wake, deliver: deliver)
        let thread = Thread {
            nameThread(name)
            var failure: (any Error)?
            do { try body(waiter) } catch { failure = error }
            wake.close()
            finish(failure)
        }
        thread.name = name
        thread.start()
    }

    /// Names the calling thread for the kernel (what pthread_setname_np does, which Glibc's module hides).
    private static func nameThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }
}
