/// How large a receive window one connection may offer while it runs (pure; `ConnectionTap` carries it out
/// with TCP_WINDOW_CLAMP every `period`).
///
/// A pause can only keep what has reached this machine; what the server has in flight when the connection
/// closes is lost, and that is up to one advertised window. Left alone, the kernel's receive autotuning
/// grows the window to fill whatever queue the link has (a 50 ms queue at 100 Mbit/s: 600 KB), which is
/// what a pause then throws away. The window a transfer needs is about one bandwidth-delay product of the
/// path without its queue; the governor allows twice the rate the connection is delivering times its lowest
/// round trip, so a window that limits the rate doubles each turn until the link, not the window, is the
/// limit. Never below `floor` shared by the connections, so a short path never waits on the window.
struct WindowGovernor: Sendable {
    /// The window every connection of a download may offer together, whatever the rate (bytes).
    static let floor = 48 << 10
    /// The least window one connection is clamped to (the kernel's own floor is about 2 KiB).
    static let connectionFloor = 8 << 10
    /// The most: a clamp above the kernel's largest receive buffer changes nothing.
    static let ceiling = 64 << 20
    /// How often the windows are set again.
    static let period: Duration = .milliseconds(20)
    /// How much faster than it delivers now a connection may go on the window it is given.
    static let headroom = 2.0
    /// How much of the fastest recent rate is still trusted a turn later (a stall of the disk or the server
    /// does not shut the window at once).
    static let decay = 0.9

    private var lastRead: Int64
    private var lastTime: ContinuousClock.Instant
    /// Bytes per second: the fastest recent, decaying.
    private(set) var rate: Double = 0

    /// Starts counting from a connection's opening.
    init(read: Int64 = 0, at time: ContinuousClock.Instant) {
        lastRead = read
        lastTime = time
    }

    /// Segments a window holds at least: fewer, and the sender waits on the window (silly-window avoidance)
    /// whatever the rate — on loopback one segment is 64 KiB.
    static let segments = 4

    /// The least window of one of `connections`: its share of `floor`, and room for `segments` of the
    /// peer's (`segment` bytes each; 0 unknown).
    static func least(segment: Int, connections: Int) -> Int {
        max(connectionFloor, floor / max(1, connections), segments * min(max(0, segment), 1 << 20))
    }

    /// The window for the connection now, from its bytes read so far, its lowest round trip (nil when the
    /// kernel gives none), the largest segment the peer may send (0 unknown) and how many connections the
    /// download has open; nil when there is nothing to go by.
    mutating func window(
        read: Int64, at now: ContinuousClock.Instant, minRTT: Duration?, segment: Int = 0,
        connections: Int
    ) -> Int? {
        let elapsed = now - lastTime
        guard elapsed > .zero, read >= lastRead else { return nil }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        let instant = Double(read - lastRead) / seconds
        rate = max(instant, rate * Self.decay)
        lastRead = read
        lastTime = now
        let floor = Self.least(segment: segment, connections: connections)
        guard let minRTT, minRTT > .zero else { return nil }
        let rtt = Double(minRTT.components.seconds) + Double(minRTT.components.attoseconds) * 1e-18
        let wanted = Self.headroom * rate * rtt
        // Checked before the conversion: a count from outside must not trap it.
        guard wanted.isFinite, wanted < Double(Self.ceiling) else { return Self.ceiling }
        return max(floor, Int(wanted))
    }
}
