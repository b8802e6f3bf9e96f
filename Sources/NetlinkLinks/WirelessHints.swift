import BlockingIO
import CNetlink
import Foundation
import Links
import Logging

/// Wi-Fi SSID and BSSID from the kernel's nl80211, for machines where NetworkManager does not run
/// (wpa_supplicant or iwd alone, networkd): a station's SSID from `GET_INTERFACE`, its BSSID from the BSS
/// dump's associated entry.
///
/// Event-driven: one read, then a dedicated thread sleeps in `poll` on a socket joined to nl80211's `mlme`
/// and `config` groups; a connect, roam, disconnect or interface change reads again, and a change of the
/// hints is yielded. No polling, no timer. Without nl80211 (no cfg80211: containers, machines without
/// Wi-Fi) it yields empty hints once, logs one debug line and ends.
public struct WirelessHints: LinkHintSource {
    let logger: Logger

    public init(logger: Logger = Logger(label: "meterwise.hints")) {
        self.logger = logger
    }

    public func hints() -> AsyncStream<LinkHints> {
        let logger = self.logger
        return PollThread.stream(named: "mw-nl80211", bufferingPolicy: .bufferingNewest(1)) { waiter in
            Self.follow(waiter: waiter, logger: logger)
        }
    }

    /// The thread's body: yields the hints now, then each change, until the consumer goes away or netlink fails.
    static func follow(waiter: PollWaiter<LinkHints>, logger: Logger) {
        let emit = { (hints: LinkHints) in _ = waiter.yield(hints) }
        let connection: Nl80211Connection
        do {
            guard let opened = try Nl80211Connection.open() else {
                logger.debug("nl80211: not in this kernel (no cfg80211); no Wi-Fi hints from it")
                emit(.none)
                return
            }
            connection = opened
        } catch {
            logger.debug("nl80211: \(error); no Wi-Fi hints from it")
            emit(.none)
            return
        }
        do {
            var last = try connection.read().hints
            emit(last)
            while try waitForChange(connection, waiter: waiter) {
                let now = try connection.read().hints
                if now != last {
                    last = now
                    emit(now)
                }
            }
        } catch {
            // Stale SSIDs are worse than none: say nothing rather than what was true before the failure.
            logger.warning("nl80211: \(error); Wi-Fi hints from nl80211 stop")
            emit(.none)
        }
    }

    /// Sleeps until an event may have changed an SSID or BSSID (true) or the consumer goes away (false).
    private static func waitForChange(_ connection: Nl80211Connection, waiter: PollWaiter<LinkHints>)
        throws(NetlinkError) -> Bool
    {
        while true {
            let wake: PollWake
            do {
                wake = try waiter.wait(for: [PollDescriptor(connection.eventDescriptor)])
            } catch {
                throw NetlinkError(.socket, "poll on the nl80211 socket failed: \(error)")
            }
            guard case .ready = wake else { return false }
            if try connection.readEvents() { return true }
        }
    }
}
