import Testing
import Transfer

/// `SocketTally`: each socket's bytes are counted once, across looks and its destroy report.
struct SocketTallyTests {
    enum Step: Sendable, CustomStringConvertible {
        case seen(UInt64, UInt64)
        case destroyed(UInt64, UInt64)
        var description: String {
            switch self {
            case let .seen(cookie, bytes): "seen(\(cookie), \(bytes))"
            case let .destroyed(cookie, bytes): "destroyed(\(cookie), \(bytes))"
            }
        }
    }

    @Test(arguments: [
        // One socket looked at twice, then its end: every byte once.
        ([Step.seen(1, 100), .seen(1, 250), .destroyed(1, 400)], [100, 150, 150] as [UInt64], 0),
        // Two sockets interleaved.
        ([.seen(1, 10), .seen(2, 20), .seen(1, 30), .destroyed(2, 25), .destroyed(1, 30)], [10, 20, 20, 5, 0], 0),
        // A destroy report of a socket never seen is not the command's.
        ([.destroyed(9, 1000)], [0], 0),
        // A report twice (a stale dump after the destroy) counts nothing more; the second look follows it again.
        ([.seen(1, 50), .destroyed(1, 60), .destroyed(1, 60)], [50, 10, 0], 0),
        // A figure that goes down (never from the kernel) is not counted twice.
        ([.seen(1, 500), .seen(1, 400), .seen(1, 600)], [500, 0, 100], 1),
        // The largest figures do not trap.
        ([.seen(1, UInt64.max - 1), .destroyed(1, UInt64.max)], [UInt64.max - 1, 1], 0),
    ])
    func countsEachByteOnce(steps: [Step], expected: [UInt64], stillFollowed: Int) {
        var tally = SocketTally()
        var got: [UInt64] = []
        for step in steps {
            switch step {
            case let .seen(cookie, bytes): got.append(tally.seen(cookie: cookie, bytesReceived: bytes))
            case let .destroyed(cookie, bytes): got.append(tally.destroyed(cookie: cookie, bytesReceived: bytes))
            }
        }
        #expect(got == expected)
        #expect(tally.cookies.count == stillFollowed)
    }
}
