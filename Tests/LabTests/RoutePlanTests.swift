import Lab
import Links
import TestSupport
import Testing

/// The scenario → `ip` commands translation, without root.
@Suite struct RoutePlanTests {
    static let uplinks = [
        LabUplink(name: "wlan0", kind: .wlan, number: 1, rateBitsPerSecond: nil),
        LabUplink(name: "wwan0", kind: .wwan, number: 2, rateBitsPerSecond: 3_000_000),
    ]

    static func scenario(_ yaml: String) throws -> Scenario {
        try ScenarioParser.parse(yaml, file: "test.yaml")
    }

    static let commute = """
        name: commute
        links:
          wlan0: { kind: wlan }
          wwan0: { kind: wwan }
        steps:
          - { at: 0s,  up: [wlan0, wwan0], primary: wlan0 }
          - { at: 8s,  down: [wlan0],      primary: wwan0 }
          - { at: 20s, up: [wlan0],        primary: wlan0 }
        """

    @Test func commuteBecomesLinkAndRouteCommands() throws {
        let plan = ScenarioDriver(scenario: try Self.scenario(Self.commute), uplinks: Self.uplinks).plan()
        #expect(plan.map(\.at) == [.zero, .seconds(8), .seconds(20)])
        // First routes go in file order; nothing is demoted.
        #expect(
            plan[0].commands == [
                ["route", "replace", "default", "via", "10.77.1.1", "dev", "wlan0", "metric", "100"],
                ["route", "replace", "default", "via", "10.77.2.1", "dev", "wwan0", "metric", "1001"],
            ])
        // Wi-Fi drops first, then cellular is promoted: the order a connection manager produces.
        #expect(
            plan[1].commands == [
                ["link", "set", "wlan0", "down"],
                ["route", "replace", "default", "via", "10.77.2.1", "dev", "wwan0", "metric", "100"],
                ["route", "del", "default", "via", "10.77.2.1", "dev", "wwan0", "metric", "1001"],
            ])
        // Cellular is demoted before Wi-Fi comes back, so two routes never share a metric; the link's
        // policy-table route comes back with it (the kernel dropped it on link down).
        #expect(
            plan[2].commands == [
                ["route", "replace", "default", "via", "10.77.2.1", "dev", "wwan0", "metric", "1001"],
                ["route", "del", "default", "via", "10.77.2.1", "dev", "wwan0", "metric", "100"],
                ["link", "set", "wlan0", "up"],
                ["route", "replace", "default", "via", "10.77.1.1", "dev", "wlan0", "table", "101"],
                ["route", "replace", "default", "via", "10.77.1.1", "dev", "wlan0", "metric", "100"],
            ])
        #expect(plan.map(\.state.primary) == ["wlan0", "wwan0", "wlan0"])
    }

    @Test func primarySwapDemotesBeforePromoting() throws {
        let yaml = """
            name: dual
            links:
              wlan0: { kind: wlan }
              wwan0: { kind: wwan }
            steps:
              - { at: 0s, up: [wlan0, wwan0], primary: wwan0 }
              - { at: 10s, primary: wlan0 }
            """
        let plan = ScenarioDriver(scenario: try Self.scenario(yaml), uplinks: Self.uplinks).plan()
        #expect(
            plan[1].commands == [
                ["route", "replace", "default", "via", "10.77.2.1", "dev", "wwan0", "metric", "1001"],
                ["route", "del", "default", "via", "10.77.2.1", "dev", "wwan0", "metric", "100"],
                ["route", "replace", "default", "via", "10.77.1.1", "dev", "wlan0", "metric", "100"],
                ["route", "del", "default", "via", "10.77.1.1", "dev", "wlan0", "metric", "1000"],
            ])
    }

    @Test func aLinkDownFromTheStartIsTakenDown() throws {
        let yaml = """
            name: late
            links:
              wlan0: { kind: wlan }
              wwan0: { kind: wwan }
            steps:
              - { at: 0s, up: [wwan0], primary: wwan0 }
              - { at: 2s, up: [wlan0] }
            """
        let plan = ScenarioDriver(scenario: try Self.scenario(yaml), uplinks: Self.uplinks, speed: 2).plan()
        #expect(
            plan[0].commands == [
                ["link", "set", "wlan0", "down"],
                ["route", "replace", "default", "via", "10.77.2.1", "dev", "wwan0", "metric", "100"],
            ])
        #expect(plan[1].at == .seconds(1))
        #expect(
            plan[1].commands == [
                ["link", "set", "wlan0", "up"],
                ["route", "replace", "default", "via", "10.77.1.1", "dev", "wlan0", "table", "101"],
                ["route", "replace", "default", "via", "10.77.1.1", "dev", "wlan0", "metric", "1000"],
            ])
    }

    @Test func stepsRunAsOneIpBatch() {
        #expect(
            ScenarioDriver.batch([["link", "set", "wlan0", "down"], ["route", "del", "default", "dev", "wwan0"]])
                == "link set wlan0 down\nroute del default dev wwan0\n")
    }

    @Test func unchangedStepHasNoCommands() {
        let state = RouteState(up: ["wlan0", "wwan0"], metrics: ["wlan0": 100, "wwan0": 1001])
        #expect(RoutePlan.commands(from: state, to: state, uplinks: Self.uplinks).isEmpty)
    }

    @Test(arguments: ["commute", "dual-uplink", "flapping"])
    func shippedScenariosReachTheirTimelinesState(name: String) throws {
        let scenario = try ScenarioParser.load(path: RepoPaths.file("docs/scenarios/\(name).yaml"))
        let uplinks = try LabTopology.uplinks(for: scenario)
        let plan = ScenarioDriver(scenario: scenario, uplinks: uplinks).plan()
        // Replaying the commands on a model of the kernel ends in the state each step asks for.
        var model = KernelModel(uplinks: uplinks)
        for step in plan {
            for command in step.commands { model.run(command) }
            #expect(model.state == step.state, "step \(step.index) of \(name)")
            #expect(model.policyRoutes == step.state.up, "step \(step.index) of \(name): policy routes")
        }
    }
}

/// What the kernel does with the lab's commands: link down drops the link's routes (main and policy
/// tables); metrics per link. Enough to check that a plan reaches the state it claims.
struct KernelModel {
    var state: RouteState
    var policyRoutes: Set<String>
    /// Several routes per link can coexist with different metrics.
    var routes: [String: Set<Int>] = [:]

    init(uplinks: [LabUplink]) {
        state = .initial(uplinks)
        policyRoutes = Set(uplinks.map(\.name))
    }

    mutating func run(_ command: [String]) {
        switch Array(command.prefix(2)) {
        case ["link", "set"]:
            let name = command[2]
            if command[3] == "down" {
                state.up.remove(name)
                routes[name] = nil
                policyRoutes.remove(name)
            } else {
                state.up.insert(name)
            }
        case ["route", "replace"], ["route", "del"]:
            let name = command[6]
            if command[7] == "table" {
                policyRoutes.insert(name)
            } else if let metric = Int(command[8]) {
                if command[1] == "replace" {
                    routes[name, default: []].insert(metric)
                } else {
                    routes[name]?.remove(metric)
                }
            }
        default:
            Issue.record("unexpected command \(command)")
        }
        var metrics: [String: Int] = [:]
        for (name, set) in routes where set.count == 1 { metrics[name] = set.first }
        for (name, set) in routes where set.count > 1 { metrics[name] = set.min() }
        state.metrics = metrics
    }
}
