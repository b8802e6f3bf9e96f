import Links
import NetlinkLinks

/// The links of this machine now, with NetworkManager's hints when it runs: the monitor's first
/// snapshot (links, addresses, default routes and the primary uplink), then the monitor stops.
func currentLinkSnapshot() async throws -> LinkSnapshot {
    for try await snapshot in LinkSource.kernel(hints: .networkmanager).snapshots() {
        return snapshot
    }
    throw NetlinkError(.dump, "the link monitor ended before its first snapshot")
}
