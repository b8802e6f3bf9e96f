import Synchronization

/// Why the primary uplink is intercepted now (a captive portal, a limited network), shared with the
/// transfers: a TLS certificate failure then is a wait (`DownloadRequest.interceptedLink`). Nil when it is not.
final class InterceptedLink: Sendable {
    private let reason = Mutex<String?>(nil)

    var current: String? { reason.withLock { $0 } }

    func set(_ value: String?) { reason.withLock { $0 = value } }
}
