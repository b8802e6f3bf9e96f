import Engine
import Links
import Policy
import TestSupport
import Testing

@Suite struct LinkAccountingTests {
    @Test func bytesFollowTheConnectionsLinkNotTheNewPrimary() {
        let accounting = LinkAccounting()
        accounting.apply(TestSnapshots.radios(up: ["wlan0", "wwan0"], primary: "wlan0"))
        accounting.route(job: "a", link: "wlan0", budgetKey: nil)
        accounting.record(job: "a", bytes: 1000)
        // The primary moves to cellular: a connection opened on wlan0 still receives on wlan0.
        accounting.apply(TestSnapshots.radios(up: ["wlan0", "wwan0"], primary: "wwan0"))
        accounting.record(job: "a", bytes: 500)
        #expect(accounting.bytesByLink == ["wlan0": 1500])
        #expect(accounting.bytesByKind == ["wlan": 1500])
        // A job with no route yet counts for the primary.
        accounting.record(job: "b", bytes: 7)
        #expect(accounting.bytesByLink["wwan0"] == 7)
    }

    @Test func reportsTheByteThatUsesUpABudget() {
        let accounting = LinkAccounting()
        accounting.route(job: "a", link: "wwan0", budgetKey: "cell@0", budgetLimit: 1000)
        #expect(accounting.record(job: "a", bytes: 999) == false)
        #expect(accounting.record(job: "a", bytes: 1) == true)
        #expect(accounting.record(job: "a", bytes: 1) == false, "reported once, at the crossing")
        #expect(accounting.usage.used("cell@0") == 1001)
    }
}
