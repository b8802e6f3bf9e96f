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
        let (stream, continuation) = AsyncStream.makeStream(of: LinkHints.self, bufferingPolicy: .bufferingNewest(1))
        guard let stop = StopPipe() else {
            logger.warning("nl80211: cannot create a pipe (out of file descriptors?); no Wi-Fi hints from nl80211")
            continuation.yield(.none)
            continuation.finish()
            return stream
        }
        continuation.onTermination = { _ in stop.stop() }
        let logger = self.logger
        let thread = Thread {
            Self.follow(stop: stop, logger: logger) { continuation.yield($0) }
            continuation.finish()
        }
        thread.name = "meterwise-nl80211"
        thread.start()
        return stream
    }

    /// The thread's body: emits the hints now, then each change, until `stop` or a netlink failure.
    static func follow(stop: StopPipe, logger: Logger, emit: (LinkHints) -> Void) {
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
            while try waitForChange(connection, stop: stop) {
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

    /// Sleeps until an event may have changed an SSID or BSSID (true) or `stop` is called (false).
    private static func waitForChange(_ connection: Nl80211Connection, stop: StopPipe) throws(NetlinkError) -> Bool {
        var fds = [
            pollfd(fd: connection.eventDescriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: stop.readEnd, events: Int16(POLLIN), revents: 0),
        ]
        while !stop.isStopped {
            fds[0].revents = 0
            fds[1].revents = 0
            if poll(&fds, 2, -1) < 0 {
                if errno == EINTR { continue }
                throw NetlinkError(.socket, "poll on the nl80211 socket failed: \(String(cString: strerror(errno)))")
            }
            if fds[1].revents != 0 { return false }
            if fds[0].revents != 0, try connection.readEvents() { return true }
        }
        return false
    }
}
