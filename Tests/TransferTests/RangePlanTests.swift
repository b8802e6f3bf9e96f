import Testing

@testable import Transfer

struct RangePlanTests {
    static let mib: Int64 = 1 << 20

    @Test(
        arguments: [
            (
                Int64(16 << 20), 4,
                [0..<(4 << 20), (4 << 20)..<(8 << 20), (8 << 20)..<(12 << 20), (12 << 20)..<(16 << 20)]
            ),
            (
                Int64(10 << 20), 4,
                [0..<(3 << 20), (3 << 20)..<(5 << 20), (5 << 20)..<(8 << 20), (8 << 20)..<(10 << 20)]
            ),
            (Int64(1 << 20), 4, [0..<(1 << 20)]),
        ] as [(Int64, Int, [Range<Int64>])])
    func learnTotalSplitsAtChunkBoundaries(_ total: Int64, _ parts: Int, _ expected: [Range<Int64>]) {
        var plan = RangePlan.fresh(chunkSize: Self.mib)
        _ = plan.assign(segment: 0)
        plan.learnTotal(total, parts: parts)
        let ranges = [plan.active[0]!].map { $0.next..<$0.end } + plan.pending
        #expect(ranges == expected)
    }

    @Test func resumeSplitsTheGapsEvenly() {
        var plan = RangePlan(total: 12 * Self.mib, missing: [(3 * Self.mib)..<(12 * Self.mib)], chunkSize: Self.mib)
        plan.split(into: 4)
        #expect(plan.pending.map(\.count) == [2, 3, 2, 2].map { Int($0 * Self.mib) })
    }

    @Test func idleSegmentStealsHalfOfTheLargest() {
        var plan = RangePlan(total: 16 * Self.mib, missing: [0..<(16 * Self.mib)], chunkSize: Self.mib)
        #expect(plan.assign(segment: 0) == .init(next: 0, end: 16 * Self.mib))
        plan.advance(segment: 0, to: 2 * Self.mib)
        let stolen = plan.assign(segment: 1)
        #expect(stolen == .init(next: 9 * Self.mib, end: 16 * Self.mib))
        #expect(plan.end(of: 0) == 9 * Self.mib)
    }

    @Test func aStealNeverTakesWhatARequestAskedFor() {
        var plan = RangePlan(total: 16 * Self.mib, missing: [0..<(16 * Self.mib)], chunkSize: Self.mib)
        _ = plan.assign(segment: 0)
        // Segment 0 asked for 11.5 MiB; the thief takes from the chunk boundary after it, not from the middle.
        #expect(plan.request(segment: 0, span: 11 * Self.mib + Self.mib / 2) == 11 * Self.mib + Self.mib / 2)
        plan.advance(segment: 0, to: 2 * Self.mib)
        #expect(plan.assign(segment: 1) == .init(next: 12 * Self.mib, end: 16 * Self.mib))
        #expect(plan.end(of: 0) == 12 * Self.mib)
        // Asked to its end: nothing left to take.
        #expect(plan.request(segment: 1, span: nil) == 16 * Self.mib)
        plan.advance(segment: 0, to: 11 * Self.mib + Self.mib / 2)
        plan.endRequest(segment: 0)
        #expect(plan.request(segment: 0, span: 64 * Self.mib) == 12 * Self.mib)
        #expect(plan.assign(segment: 2) == nil)
        // A request that ended gives its unreceived bytes back to stealing.
        plan.endRequest(segment: 1)
        #expect(plan.assign(segment: 3) == .init(next: 14 * Self.mib, end: 16 * Self.mib))
    }

    @Test func aRequestTooSlowToWaitForIsCutPastWhatItKeeps() {
        var plan = RangePlan(total: 16 * Self.mib, missing: [0..<(16 * Self.mib)], chunkSize: 4 * Self.mib)
        _ = plan.assign(segment: 0)
        #expect(plan.request(segment: 0, span: nil) == 16 * Self.mib)
        plan.advance(segment: 0, to: 2 * Self.mib)
        // Everything is asked for: nothing to take from a request that is not slow...
        #expect(plan.assign(segment: 1) == nil)
        // ...and all but what a slow one keeps, at no chunk boundary; its request then ends there.
        let cut = 2 * Self.mib + 100_000
        #expect(plan.assign(segment: 1, slow: [0: 100_000]) == .init(next: cut, end: 16 * Self.mib))
        #expect(plan.end(of: 0) == cut)
        #expect(plan.active[0]?.requested == cut)
        // A slow request that keeps nothing (no byte came yet) loses all it has left.
        plan.advance(segment: 0, to: cut)
        _ = plan.request(segment: 1, span: nil)
        #expect(plan.assign(segment: 0) == nil)
        #expect(plan.assign(segment: 0, slow: [1: 0]) == .init(next: cut, end: 16 * Self.mib))
        #expect(plan.end(of: 1) == cut)
        #expect(plan.active[1]?.remaining == 0)
        // A slow request with less than it would keep keeps all but its last byte.
        _ = plan.request(segment: 0, span: nil)
        #expect(plan.assign(segment: 2, slow: [0: 64 * Self.mib]) == .init(next: 16 * Self.mib - 1, end: 16 * Self.mib))
    }

    @Test func stealsFallOnTheGrainNotTheChunk() {
        var plan = RangePlan(total: 16 * Self.mib, missing: [0..<(16 * Self.mib)], chunkSize: 4 * Self.mib)
        #expect(plan.grain == Self.mib)
        _ = plan.assign(segment: 0)
        plan.advance(segment: 0, to: 11 * Self.mib + 1)
        // 5 MiB - 1 left: under two chunks, over two grains.
        #expect(plan.assign(segment: 1) == .init(next: 14 * Self.mib, end: 16 * Self.mib))
        #expect(RangePlan(total: Self.mib, missing: [], chunkSize: 256 << 10).grain == 256 << 10)
    }

    @Test func theFirstBoundedAskStaysTheFirstSegmentsAfterTheSplit() {
        var plan = RangePlan.fresh(chunkSize: 4 * Self.mib)
        _ = plan.assign(segment: 0)
        #expect(plan.request(segment: 0, span: 6 * Self.mib) == 6 * Self.mib)
        plan.learnTotal(16 * Self.mib, parts: 4)
        #expect(plan.end(of: 0) == 6 * Self.mib)
        #expect(
            plan.pending == [
                (6 * Self.mib)..<(8 * Self.mib), (8 * Self.mib)..<(12 * Self.mib), (12 * Self.mib)..<(16 * Self.mib),
            ])
        // The object is smaller than the first ask: its end is the object's.
        var small = RangePlan.fresh(chunkSize: 4 * Self.mib)
        _ = small.assign(segment: 0)
        _ = small.request(segment: 0, span: 2 * Self.mib)
        small.learnTotal(Self.mib, parts: 4)
        #expect(small.end(of: 0) == Self.mib)
        #expect(small.pending.isEmpty)
    }

    @Test func nothingToStealBelowTwoChunks() {
        var plan = RangePlan(total: 2 * Self.mib, missing: [0..<(2 * Self.mib)], chunkSize: Self.mib)
        _ = plan.assign(segment: 0)
        plan.advance(segment: 0, to: 1)
        #expect(plan.assign(segment: 1) == nil)
    }

    @Test func releaseReturnsWorkToPending() {
        var plan = RangePlan(total: 8 * Self.mib, missing: [0..<(8 * Self.mib)], chunkSize: Self.mib)
        _ = plan.assign(segment: 0)
        plan.advance(segment: 0, to: 3 * Self.mib)
        plan.release(segment: 0)
        #expect(plan.pending == [(3 * Self.mib)..<(8 * Self.mib)])
        #expect(!plan.isComplete)
    }

    @Test(
        arguments: [
            (Int64(100), [Range<Int64>](), [0..<Int64(100)]),
            (100, [0..<40, 60..<100], [40..<60]),
            (100, [10..<20, 20..<30], [0..<10, 30..<100]),
            (100, [0..<100], []),
        ] as [(Int64, [Range<Int64>], [Range<Int64>])])
    func missingIsTheComplement(_ total: Int64, _ have: [Range<Int64>], _ expected: [Range<Int64>]) {
        #expect(RangePlan.missing(total: total, have: have) == expected)
    }

    @Test func completesWhenAllAssignmentsReachTheirEnd() {
        var plan = RangePlan(total: 3 * Self.mib, missing: [0..<(3 * Self.mib)], chunkSize: Self.mib)
        plan.split(into: 3)
        for id in 0..<3 {
            let a = plan.assign(segment: id)!
            plan.advance(segment: id, to: a.end)
        }
        #expect(plan.isComplete)
        #expect(plan.remainingBytes == 0)
    }
}

struct ResumeDecisionTests {
    static let chunk: Int64 = 64 << 10

    static func checkpoint(etag: String? = "\"e\"", total: Int64? = 2 * chunk, ranges: Bool = true, pieces: Int = 1)
        -> Checkpoint
    {
        Checkpoint(
            url: "http://h/f", destination: "/tmp/f", validators: Validators(etag: etag, lastModified: nil),
            totalBytes: total,
            acceptRanges: ranges, chunkSize: chunk, segments: [],
            pieces: (0..<pieces).map { Checkpoint.Piece(offset: Int64($0) * chunk, length: chunk, sha256: "x") }
        )
    }

    @Test(
        arguments: [
            ("no checkpoint", nil, false, false, ResumeAction.fresh),
            ("unreadable", nil, true, false, .discard(.damagedCheckpoint)),
            ("good", checkpoint(), false, false, .resume(checkpoint())),
            ("no validators", checkpoint(etag: nil), false, false, .discard(.unvalidated)),
            ("no validators, --resume-unvalidated", checkpoint(etag: nil), false, true, .resume(checkpoint(etag: nil))),
            ("no ranges", checkpoint(ranges: false), false, false, .discard(.rangeIgnored)),
            ("no length", checkpoint(total: nil), false, false, .discard(.damagedCheckpoint)),
            ("pieces beyond the end", checkpoint(pieces: 3), false, false, .discard(.damagedCheckpoint)),
            ("nothing written yet", checkpoint(pieces: 0), false, false, .fresh),
        ] as [(String, Checkpoint?, Bool, Bool, ResumeAction)])
    func decides(_ name: String, _ cp: Checkpoint?, _ unreadable: Bool, _ unvalidated: Bool, _ expected: ResumeAction) {
        let action = ResumeDecision.decide(
            checkpoint: cp, unreadable: unreadable, url: "http://h/f", destination: "/tmp/f",
            resumeUnvalidated: unvalidated
        )
        #expect(action == expected, "\(name)")
    }

    /// Version 1 checkpoints (sha256 pieces) still resume; each piece carries exactly one checksum.
    @Test(
        arguments: [
            (1, Checkpoint.Piece(offset: 0, length: chunk, sha256: "x"), true),
            (2, Checkpoint.Piece(offset: 0, length: chunk, crc32c: "0badcafe"), true),
            (3, Checkpoint.Piece(offset: 0, length: chunk, crc32c: "0badcafe"), false),
            (0, Checkpoint.Piece(offset: 0, length: chunk, sha256: "x"), false),
            (2, Checkpoint.Piece(offset: 0, length: chunk, crc32c: "0BADCAFE"), false),
            (
                2,
                {
                    var p = Checkpoint.Piece(offset: 0, length: chunk, crc32c: "0badcafe")
                    p.sha256 = "x"
                    return p
                }(), false
            ),
            (
                2,
                {
                    var p = Checkpoint.Piece(offset: 0, length: chunk, crc32c: "0badcafe")
                    p.crc32c = nil
                    return p
                }(), false
            ),
        ] as [(Int, Checkpoint.Piece, Bool)])
    func versionsAndPieceChecksums(_ version: Int, _ piece: Checkpoint.Piece, _ resumes: Bool) {
        var cp = Self.checkpoint()
        cp.version = version
        cp.pieces = [piece]
        let action = ResumeDecision.decide(
            checkpoint: cp, unreadable: false, url: "http://h/f", destination: "/tmp/f", resumeUnvalidated: false)
        #expect(action == (resumes ? .resume(cp) : .discard(.damagedCheckpoint)))
    }

    @Test func otherDestinationIsDiscarded() {
        let action = ResumeDecision.decide(
            checkpoint: Self.checkpoint(), unreadable: false, url: "http://h/f", destination: "/tmp/g",
            resumeUnvalidated: false)
        #expect(action == .discard(.damagedCheckpoint))
    }

    /// The stored destination is the whole path; one of an earlier release holds the path as typed
    /// (relative), and sits beside the partial file in the destination's directory: only its name counts.
    @Test(arguments: [
        ("/data/g", "/data/g", true),
        ("/data/g", "/other/g", false),
        ("/data/g", "/data/h", false),
        ("g", "/data/g", true),
        ("sub/g", "/data/sub/g", true),
        ("./g", "/data/g", true),
        ("g", "/data/h", false),
        ("", "/data/g", false),
    ])
    func storedDestinationsMatch(_ stored: String, _ destination: String, _ resumes: Bool) {
        var cp = Self.checkpoint()
        cp.destination = stored
        let action = ResumeDecision.decide(
            checkpoint: cp, unreadable: false, url: "http://h/f", destination: destination, resumeUnvalidated: false)
        #expect(action == (resumes ? .resume(cp) : .discard(.damagedCheckpoint)), "\(stored) for \(destination)")
    }

    /// A checkpoint is a file anyone may have edited: numbers that would overflow are refused, not computed.
    @Test(arguments: [
        (Int64.max - 10, Int64(50), Int64(1 << 20)),
        (Int64(0), Int64.max, Int64(1 << 20)),
        (Int64(50), Int64(50), Int64.max),
        (Int64(-50), Int64(50), Int64(1 << 20)),
    ])
    func overflowingCheckpointNumbersAreDiscarded(_ offset: Int64, _ length: Int64, _ total: Int64) {
        var cp = Self.checkpoint()
        cp.totalBytes = total
        cp.pieces = [Checkpoint.Piece(offset: offset, length: length, sha256: "x")]
        let action = ResumeDecision.decide(
            checkpoint: cp, unreadable: false, url: "http://h/f", destination: "/tmp/f", resumeUnvalidated: false)
        #expect(action == .discard(.damagedCheckpoint))
    }

    @Test(arguments: [Int64(0), Int64(-1), Int64(1), Int64(64 << 10) - 1, Int64.max, Int64(1 << 30) + 1])
    func unreasonableChunkSizesAreDiscarded(_ chunk: Int64) {
        var cp = Self.checkpoint()
        cp.chunkSize = chunk
        let action = ResumeDecision.decide(
            checkpoint: cp, unreadable: false, url: "http://h/f", destination: "/tmp/f", resumeUnvalidated: false)
        #expect(action == .discard(.damagedCheckpoint))
    }

    /// A checkpoint must name the download's URL; a presigned query may change (signatures expire).
    @Test(arguments: [
        ("http://h/f?X-Amz-Signature=new", ResumeAction.resume(checkpoint())),
        ("http://h/f#part", .resume(checkpoint())),
        ("http://h/other", .discard(.otherURL)),
        ("http://evil/f", .discard(.otherURL)),
    ])
    func checkpointMustNameTheURL(_ url: String, _ expected: ResumeAction) {
        let action = ResumeDecision.decide(
            checkpoint: Self.checkpoint(), unreadable: false, url: url, destination: "/tmp/f", resumeUnvalidated: false)
        #expect(action == expected, "\(url)")
    }

    /// A checkpoint with credentials: written redacted now, whole before 2026-11-27; either resumes the URL with
    /// its credentials and another signature, and neither resumes another host's.
    @Test(arguments: [
        ("http://<redacted>@h/f?<redacted>", "http://u:p@h/f?sig=2", true),
        ("http://u:p@h/f?sig=1", "http://u:p@h/f?sig=2", true),
        ("http://<redacted>@h/f?<redacted>", "http://u:p@evil/f?sig=2", false),
        ("http://<redacted>@h/f", "http://h/f", false),
    ])
    func aCheckpointWithCredentialsNamesTheURLWithoutThem(_ saved: String, _ url: String, _ resumes: Bool) {
        var cp = Self.checkpoint()
        cp.url = saved
        let action = ResumeDecision.decide(
            checkpoint: cp, unreadable: false, url: url, destination: "/tmp/f", resumeUnvalidated: false)
        #expect(action == (resumes ? .resume(cp) : .discard(.otherURL)), "\(saved) for \(url)")
    }
}
