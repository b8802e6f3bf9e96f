import Links
import Testing

@testable import Policy

@Suite struct ClassifyTests {
    @Test(arguments: [
        (LinkKind.wwan, true), (.bluetooth, true), (.ppp, true), (.usbTether, true),
        (.wlan, false), (.ethernet, false), (.bridge, false), (.tun, false), (.other, false),
    ])
    func builtInGuessesFollowNetworkManager(kind: LinkKind, metered: Bool) {
        let link = Fixtures.link("x0", kind)
        #expect(PolicySet().classify(link: link).metered == metered)
    }

    @Test func meteredHintBeatsTheKind() {
        #expect(PolicySet().classify(link: Fixtures.link("wwan0", .wwan, hint: false)).metered == false)
        #expect(PolicySet().classify(link: Fixtures.link("wlan0", .wlan, hint: true)).metered == true)
    }

    /// Each `match:` test, against wlan0 (SSID HomeNet, driver iwlwifi, MAC aa:bb:cc:00:00:01, 192.168.1.20/24).
    @Test(arguments: [
        ("kind: wlan", true), ("kind: [wwan, ethernet]", false),
        ("link: \"wl*\"", true), ("link: \"eth?\"", false),
        ("ssid: \"Home*\"", true), ("ssid: \"[!H]*\"", false),
        ("driver: iwlwifi", true), ("driver: \"ath*\"", false),
        ("mac: \"aa:bb:cc\"", true), ("mac: \"AA:BB:CC:00:00:01\"", true), ("mac: \"02:*\"", false),
        ("subnet: 192.168.0.0/16", true), ("subnet: [10.0.0.0/8, \"fd00::/8\"]", false),
        ("metered_hint: yes", false),
    ])
    func matchTests(match: String, matches: Bool) throws {
        let policy = try Fixtures.policy(
            "networks:\n  - name: n\n    match: { \(match) }\n    set: { labels: [hit], metered: yes }\n")
        let result = policy.classify(link: Fixtures.wlan)
        #expect(result.labels == (matches ? ["hit"] : []))
        #expect(result.metered == matches)
    }

    @Test func everyMatchingRuleAppliesLaterOverrides() throws {
        let policy = try Fixtures.policy(
            """
            networks:
              - name: a
                match: { kind: wlan }
                set: { metered: yes, labels: [x], roaming: yes }
              - name: b
                match: { ssid: "Home*" }
                set: { metered: no, labels: [home] }
            """)
        let result = policy.classify(link: Fixtures.wlan)
        #expect(result == NetworkClass(metered: false, labels: ["home", "x"], roaming: true, sources: result.sources))
        #expect(result.sources.count == 3)
    }
}

/// Phone hotspots that nobody marks metered, and who wins over whom.
@Suite struct PhoneHotspotTests {
    static func wifi(
        _ address: String = "192.168.1.20/24", bssid: String? = nil, hint: Bool? = nil,
        explicit: Bool = false
    ) -> Link {
        Link(
            index: 3, name: "wlan0", kind: .wlan, kindSource: "devtype=wlan", up: true, running: true,
            ipv4: [address], meteredHint: hint,
            meteredHintSource: hint.map { "networkmanager: \($0 ? "" : "guess-")\($0 ? "yes" : "no")" },
            meteredHintExplicit: explicit, bssid: bssid)
    }

    @Test(arguments: [
        ("172.20.10.2/28", true), ("172.20.10.15/28", true), ("172.20.10.16/28", false), ("172.20.11.2/24", false),
        ("172.20.10/28", false), ("300.20.10.2/28", false),
    ])
    func iPhoneSubnetIsMeteredGuess(address: String, metered: Bool) {
        let network = NetworkClass.builtIn(for: Self.wifi(address))
        #expect(network.metered == metered)
        if metered { #expect(network.sources.first?.contains("iPhone hotspot") == true) }
    }

    @Test func locallyAdministeredBSSIDIsMeteredGuess() {
        #expect(NetworkClass.builtIn(for: Self.wifi(bssid: "da:a1:19:00:00:01")).metered)
        #expect(!NetworkClass.builtIn(for: Self.wifi(bssid: "d8:a1:19:00:00:01")).metered)
    }

    @Test func explicitSettingWinsOverTheGuessAndTheGuessOverAnotherGuess() {
        // The user said "not metered" for this hotspot: that wins.
        #expect(!NetworkClass.builtIn(for: Self.wifi("172.20.10.2/28", hint: false, explicit: true)).metered)
        // NetworkManager only guessed "not metered": the hotspot's subnet says otherwise.
        #expect(NetworkClass.builtIn(for: Self.wifi("172.20.10.2/28", hint: false)).metered)
        // Ethernet on the same subnet is not a Wi-Fi hotspot.
        var ethernet = Self.wifi("172.20.10.2/28")
        ethernet.kind = .ethernet
        #expect(!NetworkClass.builtIn(for: ethernet).metered)
    }
}
