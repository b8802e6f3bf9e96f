import CFileCalls
import Dispatch
import NIOCore
import Synchronization

/// Moves disk writes, hashing and checkpoints off the network path, on serial dispatch queues:
/// the writer queue `pwrite`s buffers (at most about 512 KiB queued, then `write` waits) and feeds the
/// chunks' CRC-32C; the digest queue feeds the in-order whole-file sha256 when one is wanted; the
/// checkpoint queue starts write-back early and makes the data durable (fdatasync) before it writes
/// the checkpoint that describes it, while the writer queue goes on writing.
/// When: `CheckpointCadence`. A checkpoint still being written makes the next one unnecessary, so the
/// network never waits for the disk.
final class FileWriter: Sendable {
    struct State {
        var queued = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
        var error: TransferError?
        var cadence: CheckpointCadence
        var checkpointInFlight = false
    }

    let file: PartialFile
    private let digest: StreamDigest?
    private let queue = DispatchQueue(label: "meterwise.transfer.writer")
    private let digestQueue = DispatchQueue(label: "meterwise.transfer.digest")
    private let checkpointQueue = DispatchQueue(label: "meterwise.transfer.checkpoint")
    private let state: Mutex<State>
    /// `write` waits above `high` queued bytes (counted once per queue a buffer goes to) until `low`.
    private let high: Int
    private let low: Int
    /// Builds the checkpoint for the given verified pieces; nil while nothing is known yet.
    private let makeCheckpoint: @Sendable ([Checkpoint.Piece]) -> Checkpoint?
    private let directory: OutputDirectory
    private let checkpointName: String
    private let onCheckpoint: @Sendable (Int64) -> Void

    init(
        file: PartialFile, directory: OutputDirectory, checkpointName: String, everyBytes: Int64, every: Duration,
        limit: Int = 1 << 19,
        makeCheckpoint: @escaping @Sendable ([Checkpoint.Piece]) -> Checkpoint?,
        onCheckpoint: @escaping @Sendable (Int64) -> Void
    ) {
        self.file = file
        self.digest = file.digests ? StreamDigest(frontier: file.frontier, hasher: file.fullHasher) : nil
        self.directory = directory
        self.checkpointName = checkpointName
        self.state = Mutex(State(cadence: CheckpointCadence(everyBytes: everyBytes, every: every)))
        let queues = file.digests ? 2 : 1
        self.high = queues * limit
        self.low = queues * limit / 2
        self.makeCheckpoint = makeCheckpoint
        self.onCheckpoint = onCheckpoint
    }

    /// Queues `buffer` for `offset` (to the writer and, when wanted, to the in-order digest); waits while
    /// more than the limit is queued.
    func write(_ buffer: ByteBuffer, at offset: Int64) async throws(TransferError) {
        let n = buffer.readableBytes
        let (mustWait, error) = state.withLock { s -> (Bool, TransferError?) in
            s.queued += digest == nil ? n : 2 * n
            return (s.queued > high, s.error)
        }
        if let error { throw error }
        queue.async { [self] in
            var failure: TransferError?
            do throws(TransferError) {
                try file.write(buffer, at: offset)
            } catch {
                failure = error
            }
            let (due, writeback) = finished(n, failure: failure, written: true)
            if due {
                checkpointOnQueue()
            } else if writeback {
                checkpointQueue.async { [file] in _ = mw_start_writeback(file.fd) }
            }
        }
        if let digest {
            digestQueue.async { [self] in
                digest.feed(buffer, at: offset)
                _ = finished(n, failure: nil, written: false)
            }
        }
        if mustWait {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.queued <= low { return true }
                    s.waiters.append(c)
                    return false
                }
                if now { c.resume() }
            }
        }
    }

    /// One queue is done with `n` bytes; returns whether a checkpoint is due and whether write-back
    /// should start (writer queue only).
    private func finished(_ n: Int, failure: TransferError?, written: Bool) -> (checkpoint: Bool, writeback: Bool) {
        let (resume, due, writeback) = state.withLock { s -> ([CheckedContinuation<Void, Never>], Bool, Bool) in
            s.queued -= n
            if let failure, s.error == nil { s.error = failure }
            var due = false
            var writeback = false
            if written { (due, writeback) = s.cadence.wrote(n, at: .now) }
            var ready: [CheckedContinuation<Void, Never>] = []
            if s.queued <= low {
                ready = s.waiters
                s.waiters = []
            }
            return (ready, due, writeback)
        }
        for w in resume { w.resume() }
        return (due, writeback)
    }

    /// Runs on the writer queue: takes the pieces written so far, then (on the checkpoint queue, so
    /// writes go on meanwhile) fsyncs the data and writes the checkpoint crash-safely. The fsync covers
    /// at least the pieces taken, so the checkpoint never describes data that is not on disk.
    /// `wait` blocks until it is written (pause, failure); otherwise a checkpoint still being written
    /// makes this one unnecessary.
    private func checkpointOnQueue(wait: Bool = false) {
        let busy = state.withLock { s -> Bool in
            if s.checkpointInFlight && !wait { return true }
            s.checkpointInFlight = true
            s.cadence.checkpointed(at: .now)
            return false
        }
        if busy { return }
        let pieces = file.pieces(forCheckpoint: true)
        let job: @Sendable () -> Void = { [self] in
            do throws(TransferError) {
                try file.sync()
                if let checkpoint = makeCheckpoint(pieces) {
                    try CheckpointFile.write(checkpoint, in: directory, name: checkpointName)
                    onCheckpoint(checkpoint.bytesDone)
                }
            } catch {
                state.withLock { if $0.error == nil { $0.error = error } }
            }
            state.withLock { $0.checkpointInFlight = false }
        }
        if wait {
            checkpointQueue.sync(execute: job)
        } else {
            checkpointQueue.async(execute: job)
        }
    }

    /// Runs `body` on the writer thread after every queued write.
    func onQueue<T: Sendable>(_ body: @escaping @Sendable (PartialFile) -> T) async -> T {
        await withCheckedContinuation { c in
            queue.async { [file] in c.resume(returning: body(file)) }
        }
    }

    /// Waits for queued writes, then writes a checkpoint (pause, shutdown, failure).
    func checkpointNow() async throws(TransferError) {
        await onQueue { _ in self.checkpointOnQueue(wait: true) }
        if let error = state.withLock({ $0.error }) { throw error }
    }

    /// Waits for queued writes and digests, and reports a write error, if any.
    func drain() async throws(TransferError) {
        await onQueue { _ in () }
        if digest != nil { await withCheckedContinuation { c in digestQueue.async { c.resume() } } }
        await withCheckedContinuation { c in checkpointQueue.async { c.resume() } }
        if let error = state.withLock({ $0.error }) { throw error }
    }

    /// Empties the partial file and the digest (restart from 0); call with nothing queued.
    func reset() async throws(TransferError) {
        let failure = await onQueue { f -> TransferError? in
            do throws(TransferError) {
                try f.reset(total: nil)
                return nil
            } catch {
                return error
            }
        }
        if let digest {
            await withCheckedContinuation { c in
                digestQueue.async {
                    digest.reset()
                    c.resume()
                }
            }
        }
        if let failure { throw failure }
    }

    /// The sha256 of the first `total` bytes of the file, once everything queued is written; nil when the
    /// file was opened without `digests`.
    func sha256(total: Int64) async throws(TransferError) -> String? {
        try await drain()
        guard let digest else { return nil }
        return await withCheckedContinuation { c in
            digestQueue.async { [file] in c.resume(returning: digest.finalize(fd: file.fd, total: total)) }
        }
    }
}
