/// A source of link snapshots: the kernel (netlink) or a scenario file (simulated).
///
/// `snapshots()` yields the current state first, then one snapshot per change, coalesced: a burst of
/// kernel messages gives one snapshot. Cancelling the consuming task, or dropping the sequence, stops
/// the monitor. A scenario monitor finishes its sequence when the scenario ends.
public protocol LinkMonitor: Sendable {
    func snapshots() -> AsyncThrowingStream<LinkSnapshot, any Error>

    /// The link the kernel sends packets to `address` (IPv4 or IPv6 text) out of, from the local address
    /// `source` when given: its own routing decision, with routes other than the default ones and policy rules.
    /// Nil when this monitor cannot say (a scenario has default routes only) or there is no route.
    func outgoingRoute(to address: String, from source: String?) -> KernelRoute?
}

extension LinkMonitor {
    public func outgoingRoute(to address: String, from source: String?) -> KernelRoute? { nil }
}
