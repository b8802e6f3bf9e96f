import Synchronization

/// A source of hints about links from outside the kernel (NetworkManager, ...).
///
/// `hints()` yields the current hints first (at once, empty when the source is not running), then one
/// value per change.
public protocol LinkHintSource: Sendable {
    func hints() -> AsyncStream<LinkHints>
}

/// A link monitor whose snapshots carry the hints of other sources: a hint change (NetworkManager marking
/// a link metered) gives a new snapshot exactly as a kernel change does, so everything downstream reacts
/// the same way to both.
public struct HintedLinkMonitor: LinkMonitor {
    let base: any LinkMonitor
    let sources: [any LinkHintSource]

    public init(base: any LinkMonitor, sources: [any LinkHintSource]) {
        self.base = base
        self.sources = sources
    }

    public func outgoingRoute(to address: String, from source: String?) -> KernelRoute? {
        base.outgoingRoute(to: address, from: source)
    }

    public func snapshots() -> AsyncThrowingStream<LinkSnapshot, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: LinkSnapshot.self)
        let (base, sources) = (self.base, self.sources)
        let task = Task {
            let join = HintJoin(sourceCount: sources.count)
            do {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (index, source) in sources.enumerated() {
                        group.addTask {
                            for await hints in source.hints() {
                                if let out = join.hints(hints, from: index) { continuation.yield(out) }
                            }
                        }
                    }
                    // The kernel's snapshots drive the monitor: when they end (a scenario's end), so does it.
                    for try await snapshot in base.snapshots() {
                        if let out = join.snapshot(snapshot) { continuation.yield(out) }
                    }
                    group.cancelAll()
                }
                continuation.finish()
            } catch is CancellationError {
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}

/// The joining state: the kernel's last snapshot, every source's last hints, what was last delivered.
/// Pure apart from its lock; `snapshot(_:)` and `hints(_:from:)` return what to deliver, if anything.
final class HintJoin: Sendable {
    struct State {
        var snapshot: LinkSnapshot?
        var hints: [LinkHints?]
        var delivered: LinkSnapshot?
        var sequence: UInt64 = 0
    }

    private let state: Mutex<State>

    init(sourceCount: Int) {
        state = Mutex(State(hints: Array(repeating: nil, count: sourceCount)))
    }

    func snapshot(_ snapshot: LinkSnapshot) -> LinkSnapshot? {
        state.withLock { state in
            state.snapshot = snapshot
            return Self.next(&state)
        }
    }

    func hints(_ hints: LinkHints, from index: Int) -> LinkSnapshot? {
        state.withLock { state in
            state.hints[index] = hints
            return Self.next(&state)
        }
    }

    /// The joined snapshot once the kernel and every source have spoken, when it differs from the last one
    /// delivered (sequence and timestamp aside); numbered consecutively.
    static func next(_ state: inout State) -> LinkSnapshot? {
        guard let snapshot = state.snapshot else { return nil }
        var all: [LinkHints] = []
        for hints in state.hints {
            guard let hints else { return nil }
            all.append(hints)
        }
        var joined = snapshot.applying(LinkHints.merging(all))
        if let delivered = state.delivered {
            var same = joined
            same.sequence = delivered.sequence
            same.timestamp = delivered.timestamp
            if same == delivered { return nil }
        }
        state.sequence += 1
        joined.sequence = state.sequence
        state.delivered = joined
        return joined
    }
}
