import Lab
import Links
import Testing

/// Rates, counters, uplinks and the analysis of samples: pure, no root.
@Suite struct LabPureTests {
    @Test(
        arguments: [
            ("3mbit", 3_000_000), ("48Mbit", 48_000_000), ("500kbit", 500_000), ("1.5gbit", 1_500_000_000),
            ("2000000", 2_000_000),
        ] as [(String, Int64)])
    func ratesParse(text: String, bits: Int64) {
        #expect(TrafficShaper.parseRate(text) == bits)
    }

    @Test(arguments: ["", "fast", "-3mbit", "0", "3 MiB/s"])
    func badRatesDoNot(text: String) {
        #expect(TrafficShaper.parseRate(text) == nil)
    }

    @Test func tbfHasABucketAGSOPacketFitsIn() {
        #expect(
            TrafficShaper.tbf(interface: "wwan0p", rateBitsPerSecond: 3_000_000)
                == [
                    "qdisc", "replace", "dev", "wwan0p", "root", "tbf", "rate", "3000000bit", "burst", "32768b",
                    "latency", "100ms",
                ])
        #expect(TrafficShaper.burstBytes(rateBitsPerSecond: 400_000_000) == 1_000_000)
    }

    @Test func procNetDevParses() {
        let text = """
            Inter-|   Receive                                                |  Transmit
             face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
                lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0
             wlan0: 4006443      93    0    0    0     0          0         0     5879      86    0    0    0     0       0          0
             wwan0:4036935     555    0    0    0     0          0         0    42045     541    0    0    0     0       0          0
            """
        let counters = InterfaceCounters.parse(procNetDev: text)
        #expect(counters.interfaces.count == 3)
        #expect(counters.interfaces["wlan0"] == .init(rx: 4_006_443, tx: 5879))
        #expect(counters.interfaces["wwan0"] == .init(rx: 4_036_935, tx: 42045))
        let later = InterfaceCounters(interfaces: [
            "wlan0": .init(rx: 5_000_000, tx: 6000),
            "eth9": .init(rx: 1, tx: 1),
        ])
        #expect(later.delta(since: counters) == ["wlan0": .init(rx: 993_557, tx: 121)])
    }

    @Test func uplinksFollowTheScenarioAndShapeSlowKinds() throws {
        let scenario = try ScenarioParser.parse(
            """
            name: s
            links:
              wlan0: { kind: wlan }
              wwan0: { kind: wwan }
              eth0: { kind: ethernet }
            steps:
              - { at: 0s, up: [wlan0] }
            """, file: "s.yaml")
        let uplinks = try LabTopology.uplinks(for: scenario, fastRate: nil, slowRate: 2_000_000)
        #expect(uplinks.map(\.name) == ["wlan0", "wwan0", "eth0"])
        #expect(uplinks.map(\.rateBitsPerSecond) == [nil, 2_000_000, nil])
        #expect(uplinks[1].deviceAddress == "10.77.2.2")
        #expect(uplinks[1].gateway == "10.77.2.1")
        #expect(uplinks[1].table == 102)
        #expect(uplinks[1].peerName == "wwan0p")
    }

    @Test func tooLongLinkNamesAreRefusedWithTheFix() throws {
        let scenario = Scenario(
            name: "s", links: [.init(name: "averyveryverylongname", kind: .wlan)],
            steps: [.init(at: .zero, up: ["averyveryverylongname"])])
        #expect {
            try LabTopology.uplinks(for: scenario)
        } throws: { error in
            (error as? LabError)?.code == .scenarioUnsupported
                && (error as? LabError)?.message.contains("at most 14") == true
        }
    }

    static let uplinks = RoutePlanTests.uplinks

    func applied(_ index: Int, at ms: Int, up: Set<String>, metrics: [String: Int]) -> ScenarioDriver.AppliedStep {
        .init(
            step: .init(
                index: index, at: .milliseconds(ms), state: RouteState(up: up, metrics: metrics),
                commands: [], note: nil),
            appliedAt: .milliseconds(ms))
    }

    func sample(_ ms: Int, _ wlan: Int64, _ wwan: Int64) -> LabAnalysis.Sample {
        .init(at: .milliseconds(ms), rx: ["wlan0": wlan, "wwan0": wwan])
    }

    @Test func analysisSplitsBytesByStepAndFindsLeakageAndQuietTime() {
        let steps = [
            applied(0, at: 0, up: ["wlan0", "wwan0"], metrics: ["wlan0": 100, "wwan0": 1001]),
            applied(1, at: 100, up: ["wwan0"], metrics: ["wwan0": 100]),
            applied(2, at: 200, up: ["wlan0", "wwan0"], metrics: ["wlan0": 100, "wwan0": 1001]),
        ]
        let samples = [
            sample(0, 0, 0), sample(50, 5000, 10), sample(100, 9000, 10), sample(110, 9500, 10),
            sample(120, 9500, 10), sample(150, 9500, 3000), sample(200, 9500, 3000),
            sample(250, 20000, 3000),
        ]
        let figures = LabAnalysis.steps(
            steps, samples: samples, previous: .initial(Self.uplinks),
            until: .milliseconds(260))
        #expect(figures.map(\.primary) == ["wlan0", "wwan0", "wlan0"])
        #expect(figures[0].rxBytes == ["wlan0": 9000, "wwan0": 10])
        #expect(figures[1].rxBytes == ["wlan0": 500, "wwan0": 2990])
        #expect(figures[1].lastRxAfter == ["wlan0": .milliseconds(10)])
        #expect(figures[2].lastRxAfter == ["wwan0": .zero])
        #expect(LabAnalysis.meteredPrimaryBytes(figures, uplinks: Self.uplinks) == ["wwan0": 2990])
    }
}
