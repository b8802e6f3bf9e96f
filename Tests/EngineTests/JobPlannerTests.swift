import Engine
import Links
import Policy
import TestSupport
import Testing

@Suite struct JobPlannerTests {
    let both = TestSnapshots.radios(up: ["wlan0", "wwan0"], primary: "wlan0")
    let cellularPrimary = TestSnapshots.radios(up: ["wlan0", "wwan0"], primary: "wwan0")
    let cellularOnly = TestSnapshots.radios(up: ["wwan0"], primary: "wwan0")

    func run(_ links: [String]) -> Decision { Decision(action: .run, allowedLinks: links, rule: "r") }

    @Test func startsOnPrimaryWhenAllowed() {
        #expect(
            JobPlanner.plan(PlannerInput(decision: run(["wlan0"]), snapshot: both, running: false))
                == .start(link: "wlan0", localAddress: nil, rate: nil))
    }

    @Test func bindsToAllowedLinkWhenPrimaryIsNot() {
        #expect(
            JobPlanner.plan(PlannerInput(decision: run(["wlan0"]), snapshot: cellularPrimary, running: false))
                == .start(link: "wlan0", localAddress: "10.77.1.2", rate: nil))
    }

    @Test func simulationDoesNotBind() {
        #expect(
            JobPlanner.plan(
                PlannerInput(
                    decision: run(["wlan0"]), snapshot: cellularPrimary, running: false,
                    canBind: false))
                == .start(link: "wlan0", localAddress: nil, rate: nil))
    }

    @Test func pausesImmediatelyWhenPolicyPauses() {
        let pause = Decision(action: .pause, rule: "p", reasons: ["metered"])
        #expect(
            JobPlanner.plan(PlannerInput(decision: pause, snapshot: cellularOnly, running: true))
                == .pause(reason: "metered"))
        #expect(JobPlanner.plan(PlannerInput(decision: pause, snapshot: cellularOnly, running: false)) == .none)
    }

    @Test func unboundTransferPausesWhenPrimaryMovesToDisallowedLink() {
        // Running over the default route; the primary became cellular: its traffic would follow.
        #expect(
            JobPlanner.plan(PlannerInput(decision: run(["wlan0"]), snapshot: cellularPrimary, running: true))
                == .pause(reason: "traffic would use wwan0, which this job may not use now"))
        // Bound to wlan0, it keeps going.
        #expect(
            JobPlanner.plan(
                PlannerInput(
                    decision: run(["wlan0"]), snapshot: cellularPrimary, running: true,
                    boundLink: "wlan0")) == .none)
    }

    @Test func hysteresisWaitsAfterPolicyPause() {
        let input = PlannerInput(
            decision: run(["wlan0"]), snapshot: both, running: false, pausedByPolicy: true,
            stableFor: .seconds(2), resumeAfter: .seconds(5))
        #expect(JobPlanner.plan(input) == .wait(remaining: .seconds(3)))
        var stable = input
        stable.stableFor = .seconds(5)
        #expect(JobPlanner.plan(stable) == .start(link: "wlan0", localAddress: nil, rate: nil))
        var fresh = input
        fresh.pausedByPolicy = false
        #expect(JobPlanner.plan(fresh) == .start(link: "wlan0", localAddress: nil, rate: nil), "never paused: at once")
    }

    @Test func throttleAdjustsRunningRate() {
        let throttle = Decision(action: .throttle, rate: 1 << 20, allowedLinks: ["wwan0"], rule: "t")
        #expect(
            JobPlanner.plan(PlannerInput(decision: throttle, snapshot: cellularOnly, running: true))
                == .adjust(rate: 1 << 20))
        #expect(
            JobPlanner.plan(
                PlannerInput(
                    decision: throttle, snapshot: cellularOnly, running: true,
                    currentRate: 1 << 20)) == .none)
        #expect(
            JobPlanner.plan(PlannerInput(decision: throttle, snapshot: cellularOnly, running: false))
                == .start(link: "wwan0", localAddress: nil, rate: 1 << 20))
    }

    @Test func allowedLinkDownMeansPause() {
        #expect(
            JobPlanner.plan(PlannerInput(decision: run(["wlan0"]), snapshot: cellularOnly, running: true))
                == .pause(reason: "no allowed link is up"))
    }
}
