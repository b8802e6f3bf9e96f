import Synchronization

/// How many of a download's segments may have a request out at once: background mode shares a small window
/// among fewer connections (`BackgroundWindow.connections(for:least:open:)`); the others finish the request
/// they have and wait here before asking for more. Unlimited in the foreground.
final class RequestGate: Sendable {
    private struct State {
        var allowed: Int?
        var out = 0
    }

    private let state = Mutex(State())
    /// How often a waiting segment looks again.
    static let slice: Duration = .milliseconds(10)

    /// Sets how many requests may be out (nil: no limit; 0 while background mode steps aside). Requests out
    /// keep going.
    func setAllowed(_ allowed: Int?) {
        state.withLock { $0.allowed = allowed.map { max(0, $0) } }
    }

    var allowed: Int? { state.withLock { $0.allowed } }

    /// Waits for room for one more request, then counts it; false when `stop()` turned true first.
    func enter(unless stop: () -> Bool) async throws -> Bool {
        while true {
            let entered = state.withLock { s -> Bool in
                guard s.out < (s.allowed ?? .max) else { return false }
                s.out += 1
                return true
            }
            if entered { return true }
            if stop() { return false }
            try await Task.sleep(for: Self.slice)
        }
    }

    /// A request counted by `enter` ended.
    func leave() {
        state.withLock { $0.out = max(0, $0.out - 1) }
    }
}
