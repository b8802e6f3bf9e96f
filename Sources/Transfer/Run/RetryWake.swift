import Synchronization

/// Lets a download's back-off end early: segments sleeping before a retry wake when `wakeAll()` is called
/// (the engine calls it on a link change: a new link is a reason to try at once).
final class RetryWake: Sendable {
    private struct State {
        var wakes: UInt64 = 0
        var nextID: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var cancelled: Set<UInt64> = []
    }

    private let state = Mutex(State())

    /// How many times `wakeAll()` was called: a caller sleeping in short turns tells a wake from its own
    /// timeout by a change of this count.
    var wakes: UInt64 { state.withLock { $0.wakes } }

    /// Ends every sleep in progress.
    func wakeAll() {
        let waiting = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.wakes &+= 1
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for c in waiting { c.resume() }
    }

    /// Sleeps for `delay`, or until `wakeAll()`; throws `CancellationError` when the task is cancelled.
    func sleep(for delay: Duration) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await Task.sleep(for: delay) }
            group.addTask { await self.waitForWake() }
            defer { group.cancelAll() }
            try await group.next()
        }
        try Task.checkCancellation()
    }

    private func waitForWake() async {
        let id = state.withLock { s -> UInt64 in
            s.nextID += 1
            return s.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.cancelled.remove(id) != nil { return true }
                    s.waiters[id] = c
                    return false
                }
                if now { c.resume() }
            }
        } onCancel: {
            let c = state.withLock { s -> CheckedContinuation<Void, Never>? in
                if let c = s.waiters.removeValue(forKey: id) { return c }
                s.cancelled.insert(id)
                return nil
            }
            c?.resume()
        }
    }
}
