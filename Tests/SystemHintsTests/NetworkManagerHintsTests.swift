import Foundation
import Lab
import Links
import SystemHints
import TestSupport
import Testing

/// The hints source against a real NetworkManager on a private bus (`NetworkManagerLab`): a DHCP server
/// that says ANDROID_METERED, then the user's `connection.metered` flipped with no kernel change.
@Suite(.serialized, .needsNetworkManager) struct NetworkManagerHintsTests {
    /// Collects what the source yields.
    final class Recorder: @unchecked Sendable {
        let lock = NSLock()
        var values: [LinkHints] = []
        var latest: LinkHints? { lock.withLock { values.last } }
        func append(_ hints: LinkHints) { lock.withLock { values.append(hints) } }
    }

    func withSource(bus: String, _ body: (Recorder) async throws -> Void) async throws {
        setenv("DBUS_SYSTEM_BUS_ADDRESS", bus, 1)
        defer { unsetenv("DBUS_SYSTEM_BUS_ADDRESS") }
        let recorder = Recorder()
        let stream = NetworkManagerHints().hints()
        let task = Task { for await hints in stream { recorder.append(hints) } }
        defer { task.cancel() }
        try await body(recorder)
    }

    @Test func androidHotspotIsMeteredAndTheUsersSettingFollows() async throws {
        let lab = try await NetworkManagerLab.start()
        defer { lab.teardown() }
        try await withSource(bus: lab.busAddress) { recorder in
            #expect(
                await eventually { recorder.latest?.byName["wlan0"]?.metered == true },
                "no metered hint: \(String(describing: recorder.latest))")
            #expect(recorder.latest?.byName["wlan0"]?.meteredSource == "networkmanager: guess-yes")
            #expect(recorder.latest?.sources == ["networkmanager"])
            try lab.setMetered("no")
            #expect(await eventually { recorder.latest?.byName["wlan0"]?.meteredSource == "networkmanager: no" })
            #expect(recorder.latest?.byName["wlan0"]?.metered == false)
            #expect(recorder.latest?.byName["wlan0"]?.explicit == true)
            try lab.setMetered("yes")
            #expect(await eventually { recorder.latest?.byName["wlan0"]?.meteredSource == "networkmanager: yes" })
        }
    }

    @Test func withoutNetworkManagerThereAreNoHintsAndNoError() async throws {
        // A bus with nobody on it: the machine without NetworkManager.
        try await withSource(bus: "unix:path=/nonexistent/meterwise-test-bus") { recorder in
            #expect(await eventually { recorder.latest != nil })
            #expect(recorder.latest == LinkHints.none)
        }
    }
}
