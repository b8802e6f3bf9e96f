import CFileCalls
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What the process does about its own memory (the download bench's findings, bench/README.md).
enum ProcessMemory {
    /// glibc returns freed heap to the kernel above 128 KiB at the top and adjusts its thresholds as it
    /// goes; a transfer's 128 KiB buffers then cost a page fault per 4 KiB each time. Fixed thresholds
    /// keep up to 8 MiB for reuse (peak memory is unchanged: it was in use a moment before). Allocations up
    /// to 4 MiB come from the heap: over TLS the plaintext of one event-loop turn (up to four 128 KiB reads)
    /// grows a buffer to 1 MiB, which with a 1 MiB threshold was mmap'd and unmapped every turn (416 000
    /// page faults for 1 GiB with one segment, 178 000 with four; 3 944 and 5 670 with 4 MiB).
    ///
    /// One arena: a receive buffer is allocated on a network thread and freed on the writer's, and with an
    /// arena per thread each kept its own free memory (two arenas of 2.8 MB in a 1 GiB download). Shared,
    /// peak anonymous memory went from 9.3–10.0 to 8.0 MiB at the same speed (bench/README.md); the
    /// allocations are few and large, so the shared lock is not contended.
    static func tuneAllocator() {
        mw_tune_malloc(8 << 20, 4 << 20, 1)
    }

    /// Unmaps the executable's clean pages touched while starting (argument parsing, the runtime's
    /// conformance scans, and the neighbours the kernel maps around each fault): they stay in the page
    /// cache and come back on the next touch without I/O, but no longer count in this process's resident
    /// memory. Only mappings of the executable that are not writable and hold no private (relocated or
    /// copied) page are touched, so nothing is lost.
    static func releaseStartupPages() {
        guard let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"),
            let smaps = try? String(contentsOfFile: "/proc/self/smaps", encoding: .utf8)
        else { return }
        var clean: [(start: UInt, end: UInt)] = []
        var current: (start: UInt, end: UInt, eligible: Bool)?
        func close() {
            if let c = current, c.eligible { clean.append((c.start, c.end)) }
            current = nil
        }
        for line in smaps.split(separator: "\n", omittingEmptySubsequences: true) {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let first = fields.first else { continue }
            if first.contains("-"), !first.hasSuffix(":"), fields.count >= 2 {
                close()
                let bounds = first.split(separator: "-")
                guard bounds.count == 2, let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16)
                else {
                    continue
                }
                let path = fields.count >= 6 ? fields[5...].joined(separator: " ") : ""
                current = (start, end, path == exe && !fields[1].contains("w"))
            } else if first == "Anonymous:" || first == "Private_Dirty:", fields.count >= 2, fields[1] != "0" {
                current?.eligible = false
            }
        }
        close()
        for range in clean {
            _ = madvise(UnsafeMutableRawPointer(bitPattern: range.start), Int(range.end - range.start), MADV_DONTNEED)
        }
    }
}
