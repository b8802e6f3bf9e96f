import Synchronization

/// Fans engine events out to every subscriber (the demo's timeline, API clients' event streams).
/// A slow subscriber loses its oldest buffered events, never blocks the engine.
public final class EventHub: Sendable {
    private struct State {
        var next = 0
        var subscribers: [Int: AsyncStream<EngineEvent>.Continuation] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// A new stream of every event published from now on.
    public func subscribe(buffer: Int = 1024) -> AsyncStream<EngineEvent> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: EngineEvent.self, bufferingPolicy: .bufferingNewest(buffer))
        let id = state.withLock { state -> Int in
            state.next += 1
            state.subscribers[state.next] = continuation
            return state.next
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { _ = $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    public func publish(_ event: EngineEvent) {
        let subscribers = state.withLock { Array($0.subscribers.values) }
        for subscriber in subscribers { subscriber.yield(event) }
    }

    /// Ends every subscriber's stream.
    public func finish() {
        let subscribers = state.withLock { state -> [AsyncStream<EngineEvent>.Continuation] in
            defer { state.subscribers.removeAll() }
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.finish() }
    }
}
