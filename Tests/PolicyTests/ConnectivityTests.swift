import Foundation
import Links
import Testing

@testable import Policy

/// A primary link behind a captive portal, limited, or with no network is not used (issue 25, part 2): the
/// job waits with the state, its source, the portal's URL and what ends the wait; a rule that tests
/// `connectivity` decides for itself; another allowed uplink still carries the bytes.
struct ConnectivityTests {
    static func wifi(_ state: Connectivity?, portal: String? = nil, source: String = "networkmanager") -> Link {
        var link = Fixtures.wlan
        link.connectivity = state
        link.connectivitySource = state == nil ? nil : source
        link.portalURL = portal
        return link
    }

    func decide(_ yaml: String, _ snapshot: LinkSnapshot) throws -> Decision {
        try Fixtures.policy(yaml).decide(
            job: JobInfo(), snapshot: snapshot, usage: Usage(), now: Fixtures.noon, timeZone: Fixtures.utc)
    }

    static let runAll = "defaults: { action: run }\nrules:\n  - { name: r, action: run }\n"

    @Test func aPortalPausesWithItsURLAndWhatEndsTheWait() throws {
        let snapshot = Fixtures.snapshot(
            [Self.wifi(.portal, portal: "http://10.20.0.1/login")], primary: "wlan0")
        let decision = try decide(Self.runAll, snapshot)
        #expect(decision.action == .pause)
        #expect(!decision.mayRun)
        #expect(
            decision.reasons.first
                == "captive portal on wlan0: sign in at http://10.20.0.1/login (networkmanager); downloads resume when networkmanager says full"
        )
        #expect(decision.heldBy == "captive portal on wlan0: sign in at http://10.20.0.1/login (networkmanager)")
        #expect(decision.rule == "r")
    }

    @Test(arguments: [Connectivity.limited, .none, .portal])
    func everyBlockingStateWaitsAndTheDefaultToo(_ state: Connectivity) throws {
        let snapshot = Fixtures.snapshot([Self.wifi(state)], primary: "wlan0")
        for yaml in [Self.runAll, "defaults: { action: run }\n"] {
            let decision = try decide(yaml, snapshot)
            #expect(decision.action == .pause, "\(yaml)")
            #expect(decision.reasons.first?.contains("networkmanager") == true)
            #expect(decision.reasons.first?.hasSuffix("downloads resume when networkmanager says full") == true)
        }
    }

    @Test(arguments: [Connectivity.full, .unknown, nil])
    func fullUnknownOrUnsaidRun(_ state: Connectivity?) throws {
        let decision = try decide(Self.runAll, Fixtures.snapshot([Self.wifi(state)], primary: "wlan0"))
        #expect(decision.action == .run)
        #expect(decision.allowedLinks == ["wlan0"])
    }

    @Test func anotherAllowedUplinkStillCarriesTheBytes() throws {
        let snapshot = Fixtures.snapshot([Self.wifi(.portal), Fixtures.eth], primary: "wlan0")
        let decision = try decide("rules:\n  - { name: r, action: run, via: any }\n", snapshot)
        #expect(decision.action == .run)
        #expect(decision.allowedLinks == ["eth0"])
        #expect(decision.reasons.last?.hasPrefix("not using captive portal on wlan0") == true, "\(decision.reasons)")
    }

    @Test func aRuleThatTestsConnectivityDecidesForItself() throws {
        let yaml = """
            rules:
              - { name: lan-on-portal, when: { connectivity: [portal, limited] }, action: run }
              - { name: r, action: run }
            """
        let portal = try decide(yaml, Fixtures.snapshot([Self.wifi(.portal)], primary: "wlan0"))
        #expect(portal.action == .run && portal.rule == "lan-on-portal")
        #expect(portal.reasons.first == "rule `lan-on-portal` matched: connectivity portal is portal|limited")
        let full = try decide(yaml, Fixtures.snapshot([Self.wifi(.full)], primary: "wlan0"))
        #expect(full.rule == "r")
        let explained = try Fixtures.policy(yaml).explain(
            job: JobInfo(), snapshot: Fixtures.snapshot([Self.wifi(.full)], primary: "wlan0"), usage: Usage(),
            now: Fixtures.noon, timeZone: Fixtures.utc)
        #expect(explained.misses.first?.why == ["wlan0's connectivity is full, not portal|limited"])
    }

    @Test func aBadValueIsAnErrorWithItsLine() {
        let issues = Fixtures.issues("rules:\n  - name: r\n    when: { connectivity: captive }\n    action: run\n")
        let issue = issues.first { $0.message.contains("connectivity") }
        #expect(issue?.line == 3, "\(issues)")
        #expect(issue?.message.contains("unknown connectivity `captive`") == true)
        #expect(issue?.hint?.contains("portal") == true)
    }

    @Test func theBetterFamilyDecidesAndOnlyConnectivityChanges() {
        #expect(Connectivity.combined(.full, .none) == .full)
        #expect(Connectivity.combined(.none, .portal) == .portal)
        #expect(Connectivity.combined(.unknown, .unknown) == .unknown)
        #expect(Connectivity.combined(.limited, .unknown) == .limited)
        let before = Fixtures.snapshot([Self.wifi(.portal, portal: "http://p/")], primary: "wlan0")
        let after = Fixtures.snapshot([Self.wifi(.full)], primary: "wlan0")
        #expect(after.keepsLinksAndPrimary(of: before))
        var penalized = before
        penalized.defaultRoutes[0].metric += 20000
        #expect(after.keepsLinksAndPrimary(of: penalized))
        #expect(!Fixtures.onCellular.keepsLinksAndPrimary(of: before))
        #expect(
            !Fixtures.both.keepsLinksAndPrimary(
                of: Fixtures.snapshot([Fixtures.wlan, Fixtures.wwan], primary: "wlan0")))
    }
}
