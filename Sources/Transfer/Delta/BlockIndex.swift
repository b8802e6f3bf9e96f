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

    /// Which of the blocks `blocks` of the partial file `fd` (the target's length) are right, by their
    /// checksums: the check of every range fetched.
    func check(fd: Int32, blocks: Range<Int>) -> [Bool] {
        guard !blocks.isEmpty, blocks.lowerBound >= 0, blocks.upperBound <= control.blockCount else { return [] }
        var found = [UInt64](repeating: .max, count: control.blockCount)
        found.withUnsafeMutableBufferPointer { entries in
            _ = mw_block_verify_fd(
                index, fd, UInt64(control.length), UInt32(blocks.lowerBound), UInt32(blocks.count), 0,
                entries.baseAddress, nil, nil)
        }
        return blocks.map { found[$0] != .max }
    }

    /// Seeds from this size are scanned in parts on several cores.
    static let parallelFrom: Int64 = 64 << 20

    /// Scans the `length` bytes of `fd` (a seed, or the partial file in place) and fills `found` for the
    /// blocks it holds, as seed `seed`. `parts` (tests) sets how many parts a rolling scan is cut into.
    /// `progress` is called about every 250 ms with the bytes scanned.
    /// Returns the number of blocks newly found.
    func scan(
        fd: Int32, length: Int64, seed: UInt16, mode: Mode, found: BlockMap, parts asked: Int? = nil,
        progress: @escaping @Sendable (Int64) -> Void
    ) async -> Int {
        guard length > 0 else { return 0 }
        _ = posix_fadvise(fd, 0, off_t(length), POSIX_FADV_SEQUENTIAL)
        // A large seed is searched in parts, one per core (two at most: the scan reads as fast as the page
        // cache gives), each with its own copy of the map; the parts' finds are merged in offset order.
        let cores = max(1, min(2, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))))
        let parts = mode == .inPlace ? 1 : max(1, min(16, asked ?? (length >= Self.parallelFrom ? cores : 1)))
        let cancel = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
        cancel.initialize(to: 0)
        let counters = UnsafeMutablePointer<UInt64>.allocate(capacity: parts)
        counters.initialize(repeating: 0, count: parts)
        defer {
            counters.deallocate()
            cancel.deallocate()
        }
        let jobs = (0..<parts).map { part in
            ScanJob(
                index: index, fd: fd, length: UInt64(length),
                start: UInt64(length) * UInt64(part) / UInt64(parts),
                end: UInt64(length) * UInt64(part + 1) / UInt64(parts), seed: seed, mode: mode,
                found: parts == 1 ? found : BlockMap(copying: found), counter: counters + part, cancel: cancel)
        }
        let newly = await withTaskCancellationHandler {
            await withTaskGroup(of: Int?.self) { group in
                for job in jobs {
                    group.addTask {
                        await withCheckedContinuation { (done: CheckedContinuation<Int?, Never>) in
                            // A queue of its own targets an overcommitting pool: the scan never holds a thread of
                            // the cooperative pool.
                            DispatchQueue(label: "meterwise.delta.scan").async { done.resume(returning: job.run()) }
                        }
                    }
                }
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .milliseconds(250))
                        progress(jobs.reduce(0) { $0 + Int64(mw_progress_load($1.counter)) - Int64($1.start) })
                    }
                    return nil
                }
                var left = jobs.count
                var newly = 0
                while left > 0, let next = await group.next() {
                    if let n = next {
                        newly += n
                        left -= 1
                    }
                }
                group.cancelAll()
                return newly
            }
        } onCancel: {
            jobs.first?.cancel.pointee = 1
        }
        if parts > 1 {
            // Each part found its blocks in its own copy: the first part's find of a block wins.
            var merged = 0
            for block in found.entries.indices where found.entries[block] == .max {
                if let entry = jobs.lazy.map({ $0.found.entries[block] }).first(where: { $0 != .max }) {
                    found.entries[block] = entry
                    merged += 1
                }
            }
            progress(length)
            return merged
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

    /// A copy of `other`, for one part of a scan.
    init(copying other: BlockMap) { entries = other.entries }

    /// Blocks found so far.
    var foundCount: Int { entries.reduce(0) { $0 + ($1 == .max ? 0 : 1) } }
}

/// One scan's arguments, carried to its thread.
private struct ScanJob: @unchecked Sendable {
    let index: OpaquePointer
    let fd: Int32
    let length: UInt64
    /// The part of the seed whose positions this job searches.
    let start: UInt64
    let end: UInt64
    let seed: UInt16
    let mode: BlockIndex.Mode
    let found: BlockMap
    let counter: UnsafeMutablePointer<UInt64>
    let cancel: UnsafeMutablePointer<Int32>

    func run() -> Int {
        found.entries.withUnsafeMutableBufferPointer { entries in
            switch mode {
            case .rolling:
                Int(mw_block_scan_fd(index, fd, length, start, end, seed, entries.baseAddress, counter, cancel))
            case .inPlace:
                Int(
                    mw_block_verify_fd(
                        index, fd, length, 0, UInt32(entries.count), seed, entries.baseAddress, counter, cancel))
            }
        }
    }
}
