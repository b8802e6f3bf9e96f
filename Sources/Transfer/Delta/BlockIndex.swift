import CBlockSums
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// The target's block checksums hashed for the scan (`CBlockSums`), and the scans themselves: a seed
/// searched at every byte offset, a partial file checked where its blocks belong. Each scan runs on a
/// thread of its own (it is seconds of CPU on a large file) and reports how far it got.
final class BlockIndex: @unchecked Sendable {
    let control: ZsyncControl
    private let index: OpaquePointer

    init(_ control: ZsyncControl) throws(TransferError) {
        precondition(control.blockCount > 0, "an empty target has no blocks to index")
        guard
            let index = control.weak.withUnsafeBufferPointer({ weak in
                control.strong.withUnsafeBufferPointer { strong in
                    mw_block_index_new(
                        UInt32(control.blockCount), UInt32(control.blockSize), Int32(control.sequenceMatches),
                        control.weakMask, Int32(control.strongBytes), weak.baseAddress, strong.baseAddress)
                }
            })
        else {
            throw TransferError(.fileSystem, "Not enough memory for the checksums of \(control.blockCount) blocks.")
        }
        self.control = control
        self.index = index
    }

    deinit { mw_block_index_free(index) }

    /// How a scan searches its bytes.
    enum Mode { case rolling, inPlace }

    /// Scans the `length` bytes of `fd` (a seed, or the partial file in place) and fills `found` for the
    /// blocks it holds, as seed `seed`. `progress` is called about every 250 ms with the bytes scanned.
    /// Returns the number of blocks newly found.
    func scan(
        fd: Int32, length: Int64, seed: UInt16, mode: Mode, found: BlockMap,
        progress: @escaping @Sendable (Int64) -> Void
    ) async -> Int {
        guard length > 0 else { return 0 }
        guard let base = mmap(nil, Int(length), PROT_READ, MAP_PRIVATE, fd, 0), base != MAP_FAILED else { return 0 }
        defer { munmap(base, Int(length)) }
        _ = madvise(base, Int(length), MADV_SEQUENTIAL)
        let counter = UnsafeMutablePointer<UInt64>.allocate(capacity: 1)
        counter.initialize(to: 0)
        let cancel = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
        cancel.initialize(to: 0)
        defer {
            counter.deallocate()
            cancel.deallocate()
        }
        let job = ScanJob(
            index: index, base: UnsafeRawPointer(base), length: UInt64(length), seed: seed, mode: mode,
            found: found, counter: counter, cancel: cancel)
        let newly = await withTaskCancellationHandler {
            await withTaskGroup(of: Int?.self) { group in
                group.addTask {
                    await withCheckedContinuation { (done: CheckedContinuation<Int?, Never>) in
                        // A queue of its own targets an overcommitting pool: the scan never holds a thread of
                        // the cooperative pool.
                        DispatchQueue(label: "meterwise.delta.scan").async { done.resume(returning: job.run()) }
                    }
                }
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .milliseconds(250))
                        progress(Int64(mw_progress_load(job.counter)))
                    }
                    return nil
                }
                var newly = 0
                while let next = await group.next() {
                    if let n = next {
                        newly = n
                        group.cancelAll()
                    }
                }
                return newly
            }
        } onCancel: {
            job.cancel.pointee = 1
        }
        progress(length)
        return newly
    }
}

/// Where each block of the target was found: one entry per block, `MW_BLOCK_NOT_FOUND` or
/// (seed << 48) | offset. Shared with the scan's thread, which alone writes it while it runs.
final class BlockMap: @unchecked Sendable {
    var entries: [UInt64]

    init(blocks: Int) { entries = [UInt64](repeating: UInt64.max, count: blocks) }

    /// Blocks found so far.
    var foundCount: Int { entries.reduce(0) { $0 + ($1 == .max ? 0 : 1) } }
}

/// One scan's arguments, carried to its thread.
private struct ScanJob: @unchecked Sendable {
    let index: OpaquePointer
    let base: UnsafeRawPointer
    let length: UInt64
    let seed: UInt16
    let mode: BlockIndex.Mode
    let found: BlockMap
    let counter: UnsafeMutablePointer<UInt64>
    let cancel: UnsafeMutablePointer<Int32>

    func run() -> Int {
        let bytes = base.assumingMemoryBound(to: UInt8.self)
        return found.entries.withUnsafeMutableBufferPointer { entries in
            switch mode {
            case .rolling:
                Int(mw_block_scan(index, bytes, length, seed, entries.baseAddress, counter, cancel))
            case .inPlace:
                Int(mw_block_verify_in_place(index, bytes, length, seed, entries.baseAddress, counter, cancel))
            }
        }
    }
}
