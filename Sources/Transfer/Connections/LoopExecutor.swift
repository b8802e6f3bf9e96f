import NIOCore
import NIOPosix

/// Runs a task's jobs on one of the shared NIO event loops (a `TaskExecutor`).
///
/// The workers of a download from several sources (`MirrorFetch`) and of a delta (`DeltaFetch`) prefer a
/// loop: `HTTPClient` opens a request's connection on the caller's loop when the caller runs on one
/// (`MultiThreadedEventLoopGroup.any()`), so each body part is taken on the thread that read it, without a
/// hand-off between threads per buffer (a futex wake and a context switch each: bench/README.md). Their work
/// must never block for long: they write each buffer into the page cache and hash pieces off the loop.
/// A single-source segment does not: its pause drain (`PauseDrain`) needs its reads to keep up with NIO's,
/// and on the loop they lag by a turn (bench/README.md, "download").
final class LoopExecutor: TaskExecutor {
    let loop: any EventLoop

    init(_ loop: any EventLoop) { self.loop = loop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        loop.execute { job.runSynchronously(on: executor) }
    }

    /// One executor per loop of the shared group, which every download's own client uses.
    static let shared: [LoopExecutor] = MultiThreadedEventLoopGroup.singleton.makeIterator().map(LoopExecutor.init)

    /// The executor for worker `index`: workers spread over the loops.
    static func forWorker(_ index: Int) -> LoopExecutor { shared[index % shared.count] }
}

extension LoopExecutor {
    /// Sleeps `duration` on the timer of the event loop the caller runs on (a worker on a `LoopExecutor`), or
    /// with `Task.sleep` off the loops; cancellable. On a loop, `Task.sleep` goes through dispatch's timer
    /// thread and back (a futex wake, an eventfd write and a few context switches each time: bench/README.md,
    /// "mirrors"); the loop's own timer costs none of them.
    static func sleep(for duration: Duration) async throws {
        guard let loop = MultiThreadedEventLoopGroup.currentEventLoop else {
            return try await Task.sleep(for: duration)
        }
        let (seconds, attoseconds) = duration.components
        let nanoseconds = min(max(0, seconds), 1 << 32) * 1_000_000_000 + max(0, attoseconds / 1_000_000_000)
        let scheduled = loop.scheduleTask(in: .nanoseconds(nanoseconds)) {}
        try await withTaskCancellationHandler {
            try await scheduled.futureResult.get()
        } onCancel: {
            scheduled.cancel()
        }
    }
}
