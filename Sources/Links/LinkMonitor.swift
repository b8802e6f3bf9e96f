/// A source of link snapshots: the kernel (netlink) or a scenario file (simulated).
///
/// `snapshots()` yields the current state first, then one snapshot per change, coalesced: a burst of
/// kernel messages gives one snapshot. Cancelling the consuming task, or dropping the sequence, stops
/// the monitor. A scenario monitor finishes its sequence when the scenario ends.
public protocol LinkMonitor: Sendable {
    func snapshots() -> AsyncThrowingStream<LinkSnapshot, any Error>
}
