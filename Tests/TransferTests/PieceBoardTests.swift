import Testing

@testable import Transfer

/// The piece scheduler of downloads from several sources, without any I/O.
@Suite struct PieceBoardTests {
    @Test func spansAreWholePiecesAndEveryByteIsTakenOnce() {
        var board = PieceBoard(total: 10_000, pieceLength: 1000)
        #expect(board.pieceCount == 10)
        let a = board.take(source: 0, maxBytes: 2500)
        let b = board.take(source: 1, maxBytes: 1)
        #expect(a?.range == 0..<3000)
        #expect(b?.range == 3000..<4000)
        #expect(board.pending == [4000..<10_000])
        #expect(board.range(ofPiece: 9) == 9000..<10_000)
    }

    /// The last bytes of a download are shared by every connection: a span may end inside a piece, and the
    /// piece completes when its parts are all written.
    @Test func theLastBytesAreTakenInPartsOfAPiece() {
        var board = PieceBoard(total: 3000, pieceLength: 1000)
        let whole = board.take(source: 0, maxBytes: 2000)!
        #expect(whole.range == 0..<2000)
        let a = board.take(source: 1, maxBytes: 300, wholePieces: false)!
        let b = board.take(source: 2, maxBytes: 300, wholePieces: false)!
        let c = board.take(source: 0, maxBytes: 5000, wholePieces: false)!
        #expect(a.range == 2000..<2300 && b.range == 2300..<2600 && c.range == 2600..<3000)
        #expect(board.pending.isEmpty)
        #expect(board.wrote(b.id, board.reserve(b.id, count: 300)).isEmpty)
        #expect(board.wrote(c.id, board.reserve(c.id, count: 400)).isEmpty)
        #expect(board.wrote(a.id, board.reserve(a.id, count: 300)) == [2])
    }

    @Test func theLastPieceMayBeShort() {
        let board = PieceBoard(total: 2500, pieceLength: 1000)
        #expect(board.pieceCount == 3)
        #expect(board.range(ofPiece: 2) == 2000..<2500)
        #expect(PieceBoard(total: 0, pieceLength: 1000).isComplete)
    }

    @Test func writtenPiecesCompleteAndAnEndedRequestGivesBackWhatItDidNotWrite() {
        var board = PieceBoard(total: 4000, pieceLength: 1000)
        let (id, range) = board.take(source: 0, maxBytes: 4000)!
        #expect(range == 0..<4000)
        let first = board.reserve(id, count: 1500)
        #expect(first == 0..<1500)
        #expect(board.wrote(id, first) == [0])
        let second = board.reserve(id, count: 1000)
        #expect(second == 1500..<2500)
        // The request fails before writing what it reserved: all of it from 1500 goes back.
        board.finish(id)
        #expect(board.pending == [1500..<4000])
        board.verifiedPiece(0)
        #expect(board.verifiedCount == 1)
        let again = board.take(source: 1, maxBytes: 500)!
        #expect(again.range == 1500..<2000)
        #expect(board.wrote(again.id, board.reserve(again.id, count: 500)) == [1])
    }

    @Test func aFailedPieceIsRefusedToItsSenderAndGoesBackWhole() {
        var board = PieceBoard(total: 3000, pieceLength: 1000)
        let (id, _) = board.take(source: 0, maxBytes: 3000)!
        let reserved = board.reserve(id, count: 3000)
        #expect(board.wrote(id, reserved) == [0, 1, 2])
        board.finish(id)
        board.verifiedPiece(0)
        board.verifiedPiece(2)
        #expect(board.failedPiece(1) == [0])
        #expect(board.pending == [1000..<2000])
        #expect(board.take(source: 0, maxBytes: 3000) == nil)
        #expect(!board.hasWork(for: 0))
        #expect(board.hasWork(for: 1))
        #expect(board.take(source: 1, maxBytes: 3000)?.range == 1000..<2000)
    }

    /// A piece written by two sources that fails blames neither: both may fetch it again, but only whole, by
    /// one request, so the one that sends it next answers for it alone.
    @Test func aPieceMixedFromTwoSourcesThatFailsIsFetchedAgainWholeByOne() {
        let start = ContinuousClock.now
        var board = PieceBoard(total: 2000, pieceLength: 1000)
        let a = board.take(source: 0, maxBytes: 400, wholePieces: false)!
        let b = board.take(source: 1, maxBytes: 600, wholePieces: false)!
        #expect(a.range == 0..<400 && b.range == 400..<1000)
        _ = board.wrote(a.id, board.reserve(a.id, count: 400))
        #expect(board.wrote(b.id, board.reserve(b.id, count: 600)) == [0])
        board.finish(a.id)
        board.finish(b.id)
        #expect(board.failedPiece(0) == [0, 1])
        #expect(board.mayServe(0, piece: 0) && board.mayServe(1, piece: 0))
        #expect(board.whole == [0])
        // Taken whole even when the last bytes are shared out; the next piece may still be split.
        let again = board.take(source: 1, maxBytes: 100, wholePieces: false, now: start)!
        #expect(again.range == 0..<1000)
        #expect(board.take(source: 0, maxBytes: 100, wholePieces: false)?.range == 1000..<1100)
        // Not cut inside it by a faster source: the holder keeps the piece; only the rest of a span is stolen.
        var span = PieceBoard(total: 3000, pieceLength: 1000)
        let head = span.take(source: 0, maxBytes: 400, wholePieces: false)!
        let tail = span.take(source: 1, maxBytes: 3000, wholePieces: false)!
        #expect(head.range == 0..<400 && tail.range == 400..<3000)
        _ = span.wrote(head.id, span.reserve(head.id, count: 400))
        #expect(span.wrote(tail.id, span.reserve(tail.id, count: 2600)) == [0, 1, 2])
        span.finish(head.id)
        span.finish(tail.id)
        span.verifiedPiece(1)
        #expect(span.failedPiece(0) == [0, 1])
        #expect(span.failedPiece(2) == [1])
        let slow = span.take(source: 0, maxBytes: 3000, now: start)!
        #expect(slow.range == 0..<1000)
        _ = span.wrote(slow.id, span.reserve(slow.id, count: 100))
        let rates: [Int: Double] = [0: 1000, 1: 1_000_000]
        #expect(span.steal(source: 1, rates: rates, now: start + .seconds(1), minimum: 10) == nil)
        // Left part way (its connection failed), it goes back whole, and the 100 bytes written of it are dropped.
        let dropped = span.finish(slow.id)
        #expect(dropped?.piece == 0 && dropped?.dropped == 100)
        #expect(span.pending == [0..<1000, 2000..<3000])
    }

    /// A mixed piece that fails keeps each writer's spans with the CRC-32C its failed copy had (`suspects`) until
    /// the piece matches, through a failed whole fetch; a writer whose CRC-32C could not be read is left out, and a
    /// piece one source wrote alone keeps none (its sender is refused for it).
    @Test func aFailedMixedPieceKeepsEachWritersSpansUntilItMatches() {
        var board = PieceBoard(total: 2000, pieceLength: 1000)
        let a = board.take(source: 0, maxBytes: 400, wholePieces: false)!
        let b = board.take(source: 1, maxBytes: 600, wholePieces: false)!
        _ = board.wrote(a.id, board.reserve(a.id, count: 150))
        _ = board.wrote(b.id, board.reserve(b.id, count: 600))
        _ = board.wrote(a.id, board.reserve(a.id, count: 250))
        #expect(board.spansWritten(ofPiece: 0) == [0: [0..<400], 1: [400..<1000]])
        board.finish(a.id)
        board.finish(b.id)
        #expect(board.failedPiece(0, written: [0: [7], 1: [9]]) == [0, 1])
        let kept = [
            PieceBoard.Suspect(source: 0, spans: [0..<400], crcs: [7]),
            PieceBoard.Suspect(source: 1, spans: [400..<1000], crcs: [9]),
        ]
        #expect(board.suspects[0] == kept)
        #expect(board.spansWritten(ofPiece: 0).isEmpty)
        // Fetched again whole by source 1, and failing: source 1 is refused for it, the suspects stay.
        let again = board.take(source: 1, maxBytes: 100, wholePieces: false)!
        #expect(again.range == 0..<1000)
        #expect(board.wrote(again.id, board.reserve(again.id, count: 1000)) == [0])
        board.finish(again.id)
        #expect(board.failedPiece(0) == [1])
        #expect(!board.mayServe(1, piece: 0))
        #expect(board.suspects[0] == kept)
        let last = board.take(source: 0, maxBytes: 1000)!
        #expect(board.wrote(last.id, board.reserve(last.id, count: 1000)) == [0])
        board.finish(last.id)
        #expect(board.verifiedPiece(0) == kept)
        #expect(board.suspects.isEmpty)
        // A writer without a CRC-32C is left out; a piece written by one source keeps none.
        let c = board.take(source: 0, maxBytes: 500, wholePieces: false)!
        let d = board.take(source: 1, maxBytes: 500, wholePieces: false)!
        _ = board.wrote(c.id, board.reserve(c.id, count: 500))
        _ = board.wrote(d.id, board.reserve(d.id, count: 500))
        board.finish(c.id)
        board.finish(d.id)
        board.failedPiece(1, written: [1: [3]])
        #expect(board.suspects[1] == [PieceBoard.Suspect(source: 1, spans: [1500..<2000], crcs: [3])])
        var single = PieceBoard(total: 1000, pieceLength: 1000)
        let only = single.take(source: 0, maxBytes: 1000)!
        _ = single.wrote(only.id, single.reserve(only.id, count: 1000))
        single.finish(only.id)
        single.failedPiece(0, written: [0: [1]])
        #expect(single.suspects.isEmpty)
    }

    /// Two connections of one source that write one piece in turn (the last bytes shared out) keep its spans
    /// sorted and disjoint, joined where they touch: a span each, not one per write.
    @Test func aSourcesSpansOfAPieceStaySortedAndJoined() {
        var board = PieceBoard(total: 1000, pieceLength: 1000)
        let a = board.take(source: 0, maxBytes: 500, wholePieces: false)!
        let b = board.take(source: 0, maxBytes: 500, wholePieces: false)!
        #expect(a.range == 0..<500 && b.range == 500..<1000)
        for _ in 0..<2 {
            _ = board.wrote(b.id, board.reserve(b.id, count: 100))
            _ = board.wrote(a.id, board.reserve(a.id, count: 100))
        }
        #expect(board.spansWritten(ofPiece: 0) == [0: [0..<200, 500..<700]])
        _ = board.wrote(a.id, board.reserve(a.id, count: 300))
        #expect(board.spansWritten(ofPiece: 0) == [0: [0..<700]])
        var list: [Range<Int64>] = [10..<20, 40..<50]
        PieceBoard.add(0..<5, to: &list)
        PieceBoard.add(30..<35, to: &list)
        PieceBoard.add(20..<30, to: &list)
        PieceBoard.add(60..<60, to: &list)
        #expect(list == [0..<5, 10..<35, 40..<50])
        PieceBoard.add(3..<45, to: &list)
        #expect(list == [0..<50])
    }

    @Test func aSpanStopsBeforeAPieceItsSourceMayNotServe() {
        var board = PieceBoard(total: 5000, pieceLength: 1000)
        let (id, _) = board.take(source: 0, maxBytes: 5000)!
        _ = board.wrote(id, board.reserve(id, count: 5000))
        board.finish(id)
        for p in [0, 1, 3, 4] { board.verifiedPiece(p) }
        board.failedPiece(2)
        // Source 0 sent piece 2; source 1 takes it, and takes nothing past it.
        var more = PieceBoard(total: 5000, pieceLength: 1000)
        let (m, _) = more.take(source: 0, maxBytes: 1000)!
        _ = more.wrote(m, more.reserve(m, count: 1000))
        more.finish(m)
        more.failedPiece(0)
        #expect(more.take(source: 0, maxBytes: 5000)?.range == 1000..<5000)
        #expect(board.take(source: 1, maxBytes: 5000)?.range == 2000..<3000)
    }

    @Test func aFastSourceStealsTheRestOfASlowOnesSpan() {
        let start = ContinuousClock.now
        var board = PieceBoard(total: 4 << 20, pieceLength: 1 << 20)
        let slow = board.take(source: 0, maxBytes: 2 << 20, now: start)!
        let fast = board.take(source: 1, maxBytes: 2 << 20, now: start)!
        #expect(slow.range == 0..<(2 << 20))
        #expect(fast.range == (2 << 20)..<(4 << 20))
        _ = board.wrote(slow.id, board.reserve(slow.id, count: 100_000))
        _ = board.wrote(fast.id, board.reserve(fast.id, count: 2 << 20))
        board.finish(fast.id)
        // 100 KB/s against 4 MB/s: the slow source's 1.9 MB would take 19 s, the fast one's half a second.
        let rates: [Int: Double] = [0: 100_000, 1: 4_000_000]
        let stolen = board.steal(source: 1, rates: rates, now: start + .seconds(1))
        #expect(stolen?.range == 100_000..<(2 << 20))
        // The slow request may reserve nothing more; what it wrote stays.
        #expect(board.reserve(slow.id, count: 1000).isEmpty)
        #expect(!board.isOpen(slow.id))
        board.finish(slow.id)
        #expect(board.pending.isEmpty)
        // A source about as fast as the holder does not steal.
        var even = PieceBoard(total: 4 << 20, pieceLength: 1 << 20)
        let one = even.take(source: 0, maxBytes: 4 << 20, now: start)!
        _ = even.wrote(one.id, even.reserve(one.id, count: 1 << 20))
        #expect(even.steal(source: 1, rates: [0: 4_000_000, 1: 4_000_000], now: start + .seconds(1)) == nil)
    }

    @Test func aStalledSpanIsStolenOnlyAfterPatience() {
        let start = ContinuousClock.now
        var board = PieceBoard(total: 2 << 20, pieceLength: 1 << 20)
        let held = board.take(source: 0, maxBytes: 2 << 20, now: start)!
        let rates: [Int: Double] = [1: 1_000_000]
        #expect(board.steal(source: 1, rates: rates, now: start + .milliseconds(500)) == nil)
        let stolen = board.steal(source: 1, rates: rates, now: start + .seconds(3))
        #expect(stolen?.range == 0..<(2 << 20))
        #expect(!board.isOpen(held.id))
        // A source with no rate yet takes only the last piece, to be measured (below).
        #expect(board.steal(source: 2, rates: rates, now: start + .seconds(9))?.range == (1 << 20)..<(2 << 20))
        // And none from a span with less than two pieces left.
        #expect(board.steal(source: 3, rates: rates, now: start + .seconds(9)) == nil)
    }

    /// A source that joins when every byte is taken has no rate to steal with: it takes the last piece of the
    /// span with the most left, once, and is measured on it.
    @Test func aSourceWithoutARateTakesTheLastPieceOfTheLongestSpan() {
        let start = ContinuousClock.now
        var board = PieceBoard(total: 10 << 20, pieceLength: 1 << 20)
        let long = board.take(source: 0, maxBytes: 6 << 20, now: start)!
        let short = board.take(source: 1, maxBytes: 4 << 20, now: start)!
        #expect(long.range == 0..<(6 << 20) && short.range == (6 << 20)..<(10 << 20))
        _ = board.wrote(long.id, board.reserve(long.id, count: 100))
        let rates: [Int: Double] = [0: 4_000_000, 1: 4_000_000]
        let trial = board.steal(source: 2, rates: rates, now: start)
        #expect(trial?.range == (5 << 20)..<(6 << 20))
        // The holder keeps the rest and reserves no byte of the piece taken.
        #expect(board.reserve(long.id, count: 6 << 20) == 100..<(5 << 20))
        // One trial at a time: with a request of its own the source takes nothing more.
        #expect(board.steal(source: 2, rates: rates, now: start) == nil)
        board.finish(trial!.id)
        #expect(board.pending == [(5 << 20)..<(6 << 20)])
    }

    @Test func aResumedBoardHasOnlyTheUnverifiedPiecesPending() {
        let board = PieceBoard(total: 3500, pieceLength: 1000, verified: [true, false, true, false])
        #expect(board.pending == [1000..<2000, 3000..<3500])
        #expect(board.verifiedBytes == 2000)
        // A list of the wrong length is not trusted.
        #expect(PieceBoard(total: 3500, pieceLength: 1000, verified: [true]).verifiedCount == 0)
    }

    /// A pause keeps the bytes written of pieces left part way; a resumed board fetches only the rest of them.
    @Test func piecesLeftPartWayAreKeptAndOnlyTheirRestIsPending() {
        var board = PieceBoard(total: 4000, pieceLength: 1000)
        let a = board.take(source: 0, maxBytes: 2000)!
        let b = board.take(source: 1, maxBytes: 1000)!
        #expect(a.range == 0..<2000 && b.range == 2000..<3000)
        #expect(board.wrote(a.id, board.reserve(a.id, count: 1200)) == [0])
        board.verifiedPiece(0)
        #expect(board.wrote(b.id, board.reserve(b.id, count: 300)) == [])
        // Reserved and not written yet: not kept.
        _ = board.reserve(b.id, count: 100)
        #expect(board.writtenUnverified == [1000..<1200, 2000..<2300])
        board.finish(a.id)
        board.finish(b.id)
        #expect(board.writtenUnverified == [1000..<1200, 2000..<2300])

        var resumed = PieceBoard(
            total: 4000, pieceLength: 1000, verified: [true, false, false, false],
            written: [2000..<2300, 1000..<1200, 3000..<4000, 5000..<6000])
        // Piece 3 written whole was never verified: fetched again whole. A span outside the file is ignored.
        #expect(resumed.pending == [1200..<2000, 2300..<4000])
        #expect(resumed.carriedBytes == 500)
        #expect(resumed.writtenUnverified == [1000..<1200, 2000..<2300])
        let rest = resumed.take(source: 0, maxBytes: 1)!
        #expect(rest.range == 1200..<2000)
        #expect(resumed.wrote(rest.id, resumed.reserve(rest.id, count: 800)) == [1])
        // A piece that fails with bytes of the earlier run in it blames no single source.
        #expect(resumed.carriedBytes(ofPiece: 1) == 200)
        #expect(resumed.failedPiece(1) == [PieceBoard.earlierRun, 0])
        #expect(resumed.carriedBytes == 300)
        #expect(resumed.pending.first == 1000..<2000)
        // Nor is the source that wrote the rest refused for it: it may fetch it again, whole.
        #expect(resumed.mayServe(0, piece: 1) && resumed.whole.contains(1))
    }

    @Test func theRecordRoundTripsAndRefusesWhatItDidNotWrite() {
        let record = PieceRecord(
            total: 3500, pieceLength: 1000, check: "crc32c", identity: "size:3500",
            verified: [true, false, true, true], crcs: [1, 0, 0xdead_beef, 7])
        #expect(PieceRecord.decode(record.encoded()) == record)
        var bytes = record.encoded()
        bytes[bytes.count - 3] = UInt8(ascii: "g")
        #expect(PieceRecord.decode(bytes) == nil)
        #expect(PieceRecord.decode(Array("meterwise-pieces 1\ntotal -1\n".utf8)) == nil)
        var partWay = record
        partWay.written = [.init(range: 1000..<1200, crc: 0x0102_0304), .init(range: 3000..<3500, crc: 9)]
        #expect(PieceRecord.decode(partWay.encoded()) == partWay)
        // Spans outside the file, empty or reversed, or with a CRC that is not 8 hex digits are not its own.
        for bad in [
            "written 3000 3501 00000009", "written 10 10 00000009", "written 20 10 00000009",
            "written -1 10 00000009", "written 0 10 9", "written 0 10 0000000g", "written 0 10",
        ] {
            let text = String(decoding: record.encoded(), as: UTF8.self) + bad + "\n"
            #expect(PieceRecord.decode(Array(text.utf8)) == nil, "\(bad)")
        }
        let noCRC = PieceRecord(
            total: 9, pieceLength: 4, check: "sha-256", identity: "-", verified: [false, true, true])
        #expect(PieceRecord.decode(noCRC.encoded()) == noCRC)
    }

    @Test func theDefaultPieceLengthKeepsTheBoardSmall() {
        #expect(MirrorRun.defaultPieceLength(total: 0) == 1 << 20)
        #expect(MirrorRun.defaultPieceLength(total: 1 << 30) == 1 << 20)
        #expect(MirrorRun.defaultPieceLength(total: 1 << 50) == 1 << 30)
        #expect(MirrorRun.defaultPieceLength(total: Int64.max) > 0)
    }

    @Test func sourcesAreOrderedByPriority() {
        let set = MirrorSet(sources: [
            .init(url: "http://a/"), .init(url: "http://b/", priority: 5), .init(url: "http://c/", priority: 1),
            .init(url: "http://d/"),
        ])
        var ordered = set
        ordered.add([.init(url: "http://a/"), .init(url: "http://e/", priority: 2)])
        #expect(ordered.sources.map(\.url) == ["http://c/", "http://e/", "http://b/", "http://a/", "http://d/"])
    }

    /// A download's connections are shared by the sources working now, at least one each: a source that joins
    /// takes its share from the others'.
    @Test func theConnectionsAreSharedByTheWorkingSources() {
        #expect(MirrorFetch.share(of: 4, among: 1) == 4)
        #expect(MirrorFetch.share(of: 4, among: 2) == 2)
        #expect(MirrorFetch.share(of: 4, among: 3) == 2)
        #expect(MirrorFetch.share(of: 4, among: 8) == 1)
        #expect(MirrorFetch.share(of: 1, among: 3) == 1)
        #expect(MirrorFetch.share(of: 4, among: 0) == 4)
    }
}
