import ConfigKit
import Links
import TestSupport
import Testing

@Suite struct ScenarioTests {
    @Test(arguments: ["commute", "hotspot", "flapping", "dual-uplink", "dock", "hotel", "unplugged"])
    func shippedScenariosParse(name: String) throws {
        let scenario = try ScenarioParser.load(path: RepoPaths.file("docs/scenarios/\(name).yaml"))
        #expect(scenario.name == name)
        #expect(!scenario.steps.isEmpty)
    }

    @Test func commuteTimeline() throws {
        let scenario = try ScenarioParser.load(path: RepoPaths.file("docs/scenarios/commute.yaml"))
        let timeline = scenario.timeline()
        #expect(timeline.map(\.at) == [.zero, .seconds(8), .seconds(20)])
        #expect(timeline.map { $0.snapshot.primary?.name } == ["wlan0", "wwan0", "wlan0"])
        #expect(timeline[1].snapshot.link(named: "wlan0")?.isUsable == false)
        #expect(timeline[1].snapshot.link(named: "wwan0")?.kind == .wwan)
        #expect(timeline[0].snapshot.link(named: "wlan0")?.ssid == "HomeWiFi")
    }

    @Test func hotelSetsConnectivityAndThePortal() throws {
        let scenario = try ScenarioParser.load(path: RepoPaths.file("docs/scenarios/hotel.yaml"))
        let states = scenario.timeline().map { ($0.snapshot.primary?.connectivity, $0.snapshot.primary?.portalURL) }
        #expect(states.map(\.0) == [.full, .portal, .full])
        #expect(states.map(\.1) == [nil, "http://10.20.0.1/login", nil])
        #expect(scenario.timeline()[1].snapshot.primary?.connectivitySource == "scenario")
    }

    @Test func unpluggedSetsThePowerSupply() throws {
        let scenario = try ScenarioParser.load(path: RepoPaths.file("docs/scenarios/unplugged.yaml"))
        let power = scenario.timeline().map(\.snapshot.power)
        #expect(power.map(\.onBattery) == [false, true, true, false, false])
        #expect(power.map(\.batteryPercent) == [64, 31, 18, 19, 19])
        #expect(power.map(\.profile) == ["balanced", "balanced", "balanced", "power-saver", "balanced"])
        #expect(power.allSatisfy { $0.sources == ["scenario"] })
    }

    @Test func flappingToggles() throws {
        let scenario = try ScenarioParser.load(path: RepoPaths.file("docs/scenarios/flapping.yaml"))
        let primaries = scenario.timeline().map { $0.snapshot.primary?.name }
        #expect(primaries.filter { $0 == "wwan0" }.count >= 12)
        #expect(scenario.steps[1].at == .milliseconds(200))
    }

    @Test func primaryCarriesOverUntilItsLinkDrops() throws {
        let text = """
            links:
              a: { kind: ethernet }
              b: { kind: wlan }
            steps:
              - { at: 0s, up: [a, b], primary: a }
              - { at: 1s, down: [b] }
              - { at: 2s, down: [a] }
            """
        let timeline = try ScenarioParser.parse(text, file: "t.yaml").timeline()
        #expect(timeline.map { $0.snapshot.primary?.name } == ["a", "a", nil])
    }

    static let badFiles: [(String, String)] = [
        ("links:\n  wlan0: { kind: wlan }\nsteps:\n  - { at: 0s, up: [wlan1] }\n", "t.yaml:4:"),
        ("links:\n  wlan0: { kind: radio }\nsteps:\n  - { at: 0s }\n", "t.yaml:2:"),
        ("links:\n  wlan0: { kind: wlan }\nsteps:\n  - { at: 5 seconds }\n", "t.yaml:4:"),
        ("links:\n  wlan0: { kind: wlan }\nsteps:\n  - { at: 0s, primery: wlan0 }\n", "did you mean `primary`"),
        ("links:\n  wlan0: { kind: wlan }\nsteps:\n  - { at: 2s }\n  - { at: 1s }\n", "time order"),
        ("links:\n  wlan0: { kind: wlan }\nsteps:\n  - { at: 0s, primary: wlan0 }\n", "is down at this step"),
        ("links: [\n", "t.yaml:"),
        ("name: x\n", "no steps"),
        (
            "links:\n  wlan0: { kind: wlan }\nsteps:\n  - { at: 0s, connectivity: { wlan0: captive } }\n",
            "unknown connectivity"
        ),
        ("links:\n  wlan0: { kind: wlan }\nsteps:\n  - { at: 0s, portal: { wlan0: ftp://x } }\n", "t.yaml:4:"),
        ("links:\n  wlan0: { kind: wlan }\nsteps:\n  - { at: 0s, battery: 140% }\n", "from 0 to 100"),
        ("links:\n  wlan0: { kind: wlan }\nsteps:\n  - { at: 0s, power: mains }\n", "unknown power"),
    ]

    @Test(arguments: badFiles)
    func badScenarioIsLocated(text: String, expected: String) {
        do {
            _ = try ScenarioParser.parse(text, file: "t.yaml")
            Issue.record("expected an error for \(text)")
        } catch {
            #expect(error.description.contains(expected), "\(error.description)")
        }
    }

    @Test func reportsEveryProblemNotOnlyTheFirst() {
        let text = "links:\n  wlan0: { kind: radio }\nsteps:\n  - { at: 0s, up: [nope] }\n  - { at: soon }\n"
        do {
            _ = try ScenarioParser.parse(text, file: "t.yaml")
            Issue.record("expected errors")
        } catch {
            #expect(error.description.contains("t.yaml:2:"))
            #expect(error.description.contains("t.yaml:4:"))
            #expect(error.description.contains("t.yaml:5:"))
        }
    }

    @Test func monitorReplaysOnManualClock() async throws {
        let scenario = try ScenarioParser.load(path: RepoPaths.file("docs/scenarios/commute.yaml"))
        let clock = ManualClock()
        let monitor = ScenarioLinkMonitor(scenario: scenario, clock: clock)
        let stream = monitor.snapshots()
        let collector = Task {
            var received: [LinkSnapshot] = []
            for try await snapshot in stream {
                received.append(snapshot)
                if received.count == 2 { break }
            }
            return received
        }
        await clock.waitForSleepers()
        clock.advance(by: .seconds(7))
        #expect(clock.sleeperCount == 1)  // 7 s is not yet 8 s
        clock.advance(by: .seconds(1))
        let received = try await collector.value
        #expect(received.map { $0.primary?.name } == ["wlan0", "wwan0"])
        #expect(received.last?.timestamp == 8)
    }

    @Test func monitorFinishesAtEnd() async throws {
        let text = "links:\n  a: { kind: wlan }\nsteps:\n  - { at: 0s, up: [a], primary: a }\n"
        let monitor = ScenarioLinkMonitor(
            scenario: try ScenarioParser.parse(text, file: "t.yaml"),
            clock: ContinuousClock(), speed: 100)
        var count = 0
        for try await _ in monitor.snapshots() { count += 1 }
        #expect(count == 1)
    }
}
