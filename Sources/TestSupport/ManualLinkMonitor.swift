import Links
import Synchronization

/// A `LinkMonitor` the test drives by hand: `send(_:)` delivers a snapshot to the consumer.
public final class ManualLinkMonitor: LinkMonitor, Sendable {
    private let stream: AsyncThrowingStream<LinkSnapshot, any Error>
    private let continuation: AsyncThrowingStream<LinkSnapshot, any Error>.Continuation
    private let sequence = Mutex<UInt64>(0)

    public init() {
        (stream, continuation) = AsyncThrowingStream.makeStream(of: LinkSnapshot.self)
    }

    /// The one stream of snapshots (a single consumer, like the engine).
    public func snapshots() -> AsyncThrowingStream<LinkSnapshot, any Error> { stream }

    public func send(_ snapshot: LinkSnapshot) {
        var snapshot = snapshot
        snapshot.sequence = sequence.withLock { value in
            value += 1
            return value
        }
        continuation.yield(snapshot)
    }

    /// Sends a snapshot of the usual two links, `wlan0` and `wwan0`.
    public func send(up: [String], primary: String?) {
        send(TestSnapshots.radios(up: up, primary: primary))
    }

    public func finish() { continuation.finish() }

    /// Ends the stream with `error`, as a monitor that failed for good does.
    public func fail(_ error: any Error) { continuation.finish(throwing: error) }
}

/// Snapshots for tests.
public enum TestSnapshots {
    /// `wlan0` (index 2) and `wwan0` (index 3), the ones in `up` up with a default route each; the
    /// primary's route has the lower metric.
    public static func radios(up: [String], primary: String?) -> LinkSnapshot {
        let specs: [(String, LinkKind, String)] = [
            ("wlan0", .wlan, "10.77.1.2/24"), ("wwan0", .wwan, "10.77.2.2/24"),
            ("eth0", .ethernet, "10.77.3.2/24"),
        ]
        var links: [Link] = []
        var routes: [DefaultRoute] = []
        for (offset, (name, kind, address)) in specs.enumerated() {
            let isUp = up.contains(name)
            links.append(
                Link(
                    index: offset + 2, name: name, kind: kind, kindSource: "test", up: isUp, running: isUp,
                    ipv4: isUp ? [address] : []))
            if isUp {
                routes.append(
                    DefaultRoute(
                        family: .ipv4, linkIndex: offset + 2, link: name,
                        metric: name == primary ? 100 : 600 + offset))
            }
        }
        return LinkSnapshot(links: links, defaultRoutes: routes)
    }
}
