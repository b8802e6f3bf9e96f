import Foundation
import Links
import Testing

@testable import SystemHints

/// What NetworkManager's values mean as hints (pure).
@Suite struct NetworkManagerValuesTests {
    @Test(
        arguments: [
            (UInt32(0), nil, nil, false), (1, true, "networkmanager: yes", true),
            (2, false, "networkmanager: no", true),
            (3, true, "networkmanager: guess-yes", false), (4, false, "networkmanager: guess-no", false),
        ] as [(UInt32, Bool?, String?, Bool)])
    func meteredValues(raw: UInt32, metered: Bool?, source: String?, explicit: Bool) throws {
        let value = try #require(NetworkManagerMetered(rawValue: raw))
        #expect(value.hint?.metered == metered)
        #expect(value.hint?.meteredSource == source)
        #expect((value.hint?.explicit ?? false) == explicit)
    }

    @Test func unknownValuesAreNoHint() {
        #expect(NetworkManagerMetered(rawValue: 5) == nil)
        #expect(NetworkManagerMetered(rawValue: .max) == nil)
    }

    @Test func devicesBecomeHintsByInterfaceName() {
        let hints = NetworkManagerDevice.hints(
            [
                NetworkManagerDevice(
                    interface: "wlan0", metered: .guessYes, ssid: Array("AndroidAP".utf8),
                    bssid: "DA:A1:19:00:00:01"),
                NetworkManagerDevice(interface: "eth0", metered: .unknown, isPrimary: true),
                NetworkManagerDevice(interface: "wwan0", metered: .unknown),
                NetworkManagerDevice(interface: "", metered: .yes),
            ], global: .yes)
        #expect(hints.sources == ["networkmanager"])
        #expect(
            hints.byName["wlan0"]
                == LinkHint(
                    metered: true, meteredSource: "networkmanager: guess-yes",
                    ssid: "AndroidAP", bssid: "da:a1:19:00:00:01"))
        // The primary connection's device takes the global verdict when its own is unknown.
        #expect(hints.byName["eth0"]?.metered == true && hints.byName["eth0"]?.explicit == true)
        // Unknown and not primary: no hint at all; a device without a name is skipped.
        #expect(hints.byName["wwan0"] == nil)
        #expect(hints.byName.count == 2)
    }

    /// Option 114 as NetworkManager keeps it becomes the link's portal API, checked as a lease's is.
    @Test func aDevicesOption114IsItsPortalAPI() {
        var device = NetworkManagerDevice(interface: "wlan0", metered: .unknown)
        device.portalAPI = "https://portal.example/api"
        #expect(NetworkManagerDevice.hints([device], global: .unknown).byName["wlan0"]?.portalAPI == device.portalAPI)
        device.portalAPI = "http://portal.example/api"
        #expect(NetworkManagerDevice.hints([device], global: .unknown).byName["wlan0"] == nil)
    }

    @Test func ssidBytesAreTextOrHex() {
        #expect(NetworkManagerDevice.ssidText(Array("Café".utf8)) == "Café")
        #expect(NetworkManagerDevice.ssidText([0xff, 0x00, 0x41]) == "ff0041")
        #expect(NetworkManagerDevice.ssidText([]) == nil)
        #expect(NetworkManagerDevice.ssidText(Array(repeating: 0x41, count: 33)) == nil)
    }
}

/// systemd-networkd's DHCP lease files: option 43 with ANDROID_METERED is a metered guess.
@Suite struct NetworkdLeaseTests {
    @Test func androidMeteredInTheVendorOptionIsAHint() {
        let lease = """
            # This is private data. Do not parse.
            ADDRESS=192.168.43.20
            VENDOR_SPECIFIC=414E44524F49445F4D455445524544
            """
        #expect(
            NetworkdLease.hint(lease: lease) == LinkHint(metered: true, meteredSource: "networkd: DHCP ANDROID_METERED")
        )
        // Lower-case hex, and the marker among other bytes, count too.
        #expect(
            NetworkdLease.hint(lease: "VENDOR_SPECIFIC=01" + "414e44524f49445f4d455445524544" + "ff")?.metered == true)
    }

    @Test(arguments: [
        "ADDRESS=10.0.0.2", "VENDOR_SPECIFIC=414E44", "VENDOR_SPECIFIC=zz", "VENDOR_SPECIFIC=414",
        "VENDOR_SPECIFIC=" + String(repeating: "41", count: 300), "",
    ])
    func otherLeasesGiveNoHint(lease: String) {
        #expect(NetworkdLease.hint(lease: lease) == nil)
    }

    @Test func leaseDirectoryIsReadByInterfaceIndex() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mwleases-\(getpid())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Interface 1 is always `lo`.
        try "VENDOR_SPECIFIC=414E44524F49445F4D455445524544\n".write(
            toFile: directory + "/1", atomically: true, encoding: .utf8)
        try "garbage\n".write(toFile: directory + "/not-an-index", atomically: true, encoding: .utf8)
        let hints = NetworkdLeaseHints.readLeases(directory)
        #expect(hints.byName["lo"]?.metered == true)
        #expect(hints.byName.count == 1)
        #expect(NetworkdLeaseHints.readLeases(directory + "/missing") == LinkHints.none)
    }
}

/// ModemManager's 3GPP registration states as roaming hints.
@Suite struct ModemRegistrationTests {
    @Test(
        arguments: [
            (UInt32(5), true), (7, true), (10, true), (1, false), (6, false), (9, false), (11, false),
        ] as [(UInt32, Bool)])
    func registeredStatesSayWhetherRoaming(state: UInt32, roaming: Bool) {
        #expect(ModemRegistration.hint(registrationState: state) == LinkHint(roaming: roaming))
    }

    @Test(arguments: [UInt32(0), 2, 3, 4, 8, 12, .max])
    func otherStatesSayNothing(state: UInt32) {
        #expect(ModemRegistration.hint(registrationState: state) == nil)
    }
}

/// NetworkManager's connectivity and DHCP option 114 as hints (issue 25, pure).
@Suite struct ConnectivityHintTests {
    @Test func connectivityStatesByNumber() {
        #expect(
            (0...4).compactMap { Connectivity(networkManager: UInt32($0)) } == [
                .unknown, .none, .portal, .limited, .full,
            ])
        #expect(Connectivity(networkManager: 5) == nil)
    }

    @Test func aDevicesConnectivityIsTheBetterFamilysOrTheGlobalOneForThePrimary() {
        var wifi = NetworkManagerDevice(interface: "wlan0", metered: .unknown, isPrimary: true)
        wifi.ip4Connectivity = .portal
        var eth = NetworkManagerDevice(interface: "eth0", metered: .unknown)
        eth.ip4Connectivity = .full
        eth.ip6Connectivity = .none
        let lone = NetworkManagerDevice(interface: "usb0", metered: .unknown)
        let hints = NetworkManagerDevice.hints([wifi, eth, lone], global: .unknown, connectivity: .full)
        #expect(hints.byName["wlan0"]?.connectivity == .portal)
        #expect(hints.byName["wlan0"]?.connectivitySource == "networkmanager")
        #expect(hints.byName["eth0"]?.connectivity == .full)
        #expect(hints.byName["usb0"] == nil)
        // An older NetworkManager without per-device states: the global one speaks for the primary's device.
        let old = NetworkManagerDevice.hints(
            [NetworkManagerDevice(interface: "wlan0", metered: .unknown, isPrimary: true)], global: .unknown,
            connectivity: .portal)
        #expect(old.byName["wlan0"]?.connectivity == .portal)
    }

    @Test func theQuickPathFollowsConnectivitySignals() {
        var reader = NetworkManagerReader()
        var device = NetworkManagerDevice(interface: "wlan0", metered: .no, isPrimary: true)
        device.ip4Connectivity = .full
        reader.devices = ["/org/freedesktop/NetworkManager/Devices/3": device]
        let portal = reader.quickUpdate([
            PropertyChange(path: "/org/freedesktop/NetworkManager/Devices/3", key: "Ip4Connectivity", value: 2)
        ])
        #expect(portal?.byName["wlan0"]?.connectivity == .portal)
        #expect(portal?.byName["wlan0"]?.metered == false)
        let nonsense = reader.quickUpdate([
            PropertyChange(path: "/org/freedesktop/NetworkManager/Devices/3", key: "Ip4Connectivity", value: 99)
        ])
        #expect(nonsense == nil)
    }

    /// Option 114 names the portal's API (RFC 8910), not a page to sign in at: it is asked, never shown.
    @Test func aLeaseNamesThePortalsAPI() {
        let lease = "ADDRESS=10.20.0.57\nCAPTIVE_PORTAL=https://portal.example/api?ap=7\n"
        #expect(NetworkdLease.hint(lease: lease)?.portalAPI == "https://portal.example/api?ap=7")
        #expect(NetworkdLease.hint(lease: lease)?.portalURL == nil)
        #expect(NetworkdLease.hint(lease: lease)?.metered == nil)
        for good in ["https://[fe80::1]:8443/api", "https://portal.example:65535/", "https://10.0.0.1"] {
            #expect(NetworkdLease.hint(lease: "CAPTIVE_PORTAL=\(good)")?.portalAPI == good)
        }
        for bad in [
            "CAPTIVE_PORTAL=urn:ietf:params:capport:unrestricted", "CAPTIVE_PORTAL=javascript:x",
            "CAPTIVE_PORTAL=http://portal.example/api", "CAPTIVE_PORTAL=https://127.0.0.1:65536/api",
            "CAPTIVE_PORTAL=https://127.0.0.1:99999/api", "CAPTIVE_PORTAL=https://127.0.0.1:0/api",
            "CAPTIVE_PORTAL=https://h:/api", "CAPTIVE_PORTAL=https://:443/api", "CAPTIVE_PORTAL=https:///api",
            "CAPTIVE_PORTAL=https://user:pw@portal.example/api", "CAPTIVE_PORTAL=https://[::1/api",
            "CAPTIVE_PORTAL=https://[::1]x/api", "CAPTIVE_PORTAL=https://h:+443/api",
            "CAPTIVE_PORTAL=http://a b/", "CAPTIVE_PORTAL=https://" + String(repeating: "a", count: 3000),
        ] {
            #expect(NetworkdLease.hint(lease: bad) == nil, "\(bad.prefix(40))")
        }
    }
}
