/// The scenario `meterwise demo` plays when the user names none: `docs/scenarios/commute.yaml`, built in so an
/// installed binary needs no file. `BuiltInCopiesTests` (Tests/PolicyTests/ShippedPoliciesTests.swift) fails
/// the moment the two differ.
public enum ShippedScenario {
    /// The name the demo shows for it.
    public static let name = "built-in commute (docs/scenarios/commute.yaml)"

    /// The text of `docs/scenarios/commute.yaml`, byte for byte.
    public static let commuteYAML = """
        # Wi-Fi at home, cellular on the train, Wi-Fi at the office.
        name: commute
        description: Wi-Fi for 0-8 s, cellular for 8-20 s, then Wi-Fi again.
        links:
          wlan0: { kind: wlan, ssid: HomeWiFi, addresses: [192.168.1.20/24] }
          wwan0: { kind: wwan, addresses: [100.64.7.9/30] }
        steps:
          - { at: 0s,  up: [wlan0, wwan0], primary: wlan0, note: "at home on Wi-Fi" }
          - { at: 8s,  down: [wlan0],      primary: wwan0, note: "left home: cellular only" }
          - { at: 20s, up: [wlan0],        primary: wlan0, note: "at the office: Wi-Fi again" }
        """ + "\n"
}
