/// The kernel's answer to "which link do packets to this address leave by" (`ip route get fibmatch`).
public struct KernelRoute: Sendable, Equatable {
    /// The link's index.
    public var linkIndex: Int
    /// The route that matched is a default route (not one to the address's own network: a static route, a
    /// VPN's).
    public var isDefault: Bool

    public init(linkIndex: Int, isDefault: Bool) {
        self.linkIndex = linkIndex
        self.isDefault = isDefault
    }
}
