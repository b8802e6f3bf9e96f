import NIOCore
import NIOPosix

/// Runs a task's jobs on one of the shared NIO event loops (a `TaskExecutor`).
///
/// A segment's task that prefers the loop its connection runs on takes each body part where the part was
/// read: no hand-off between threads per buffer (a futex wake and a context switch each, which cost more
/// CPU than the read itself: bench/README.md, "download"). `HTTPClient` opens a request's connection on
/// the caller's loop when the caller runs on one (`MultiThreadedEventLoopGroup.any()`), so a segment
/// started here gets its connection here. The task's work must never block for long: a segment moves
/// buffers on to the writer's queue and awaits; a worker of a download from several sources writes each
/// buffer itself (into the page cache) and hashes its pieces off the loop (`MirrorFetch`).
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
