import NetlinkLinks
import Testing

/// The pure back-off and give-up decisions of the netlink monitor.
struct NetlinkRecoveryTests {
    static let limits = NetlinkRecovery.Limits(
        firstDelay: .milliseconds(50), maxDelay: .seconds(5), maxFailures: 10, window: .seconds(60),
        healthyAfter: .seconds(5))

    @Test(arguments: [
        (1, Duration.milliseconds(50)), (2, .milliseconds(100)), (3, .milliseconds(200)), (7, .milliseconds(3200)),
        (8, .seconds(5)), (9, .seconds(5)),
    ])
    func backOffDoublesUpToTheCap(failures: Int, expected: Duration) {
        var recovery = NetlinkRecovery(limits: Self.limits)
        var last: NetlinkRecovery.Action?
        for _ in 0..<failures { last = recovery.failed(at: .seconds(1)) }
        #expect(last == .reopen(after: expected))
    }

    @Test func givesUpOnlyAfterEnoughFailuresOverTheWindow() {
        var recovery = NetlinkRecovery(limits: Self.limits)
        // Ten quick failures are not enough: the window has not passed.
        for second in 0..<10 {
            #expect(recovery.failed(at: .seconds(second)) != .giveUp(failures: 10, over: .seconds(9)))
        }
        guard case .reopen = recovery.failed(at: .seconds(30)) else {
            Issue.record("gave up before the window")
            return
        }
        #expect(recovery.failed(at: .seconds(61)) == .giveUp(failures: 12, over: .seconds(61)))
    }

    @Test func sessionsThatFailAtOnceDoNotResetTheStreak() {
        var recovery = NetlinkRecovery(limits: Self.limits)
        var action: NetlinkRecovery.Action?
        for second in stride(from: 0, through: 70, by: 7) {
            recovery.opened(at: .seconds(second))
            action = recovery.failed(at: .milliseconds(second * 1000 + 100))
        }
        #expect(action == .giveUp(failures: 11, over: .milliseconds(70_000)))
    }

    @Test func aHealthySessionStartsANewStreak() {
        var recovery = NetlinkRecovery(limits: Self.limits)
        for second in 0..<9 { _ = recovery.failed(at: .seconds(second)) }
        recovery.opened(at: .seconds(10))
        #expect(recovery.failed(at: .seconds(100)) == .reopen(after: .milliseconds(50)))
        #expect(recovery.failures == 1)
    }

    @Test func limitsAreClampedToSaneValues() {
        let limits = NetlinkRecovery.Limits(
            firstDelay: .seconds(-1), maxDelay: .seconds(-5), maxFailures: 0,
            window: .seconds(-1))
        var recovery = NetlinkRecovery(limits: limits)
        #expect(recovery.failed(at: .zero) == .giveUp(failures: 1, over: .zero))
    }
}
