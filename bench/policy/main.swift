// Policy benchmark: N jobs decided before and after one link change, for every policy file given.
// bench/policy/run.sh builds it in release and prints the table (bench/README.md).
import ConfigKit
import Foundation
import Links
import Policy

func ms(_ d: Duration) -> String { String(format: "%.2f ms", d.seconds * 1000) }

func option(_ name: String, default value: Int) -> Int {
    let args = CommandLine.arguments
    guard let i = args.firstIndex(of: name), i + 1 < args.count, let n = Int(args[i + 1]), n > 0 else { return value }
    return n
}

let jobs = option("--jobs", default: 10_000)
let rounds = option("--rounds", default: 7)
var policy = "policies"
if let i = CommandLine.arguments.firstIndex(of: "--policy"), i + 1 < CommandLine.arguments.count {
    policy = CommandLine.arguments[i + 1]
}
var files = [policy]
var isDir: ObjCBool = false
if FileManager.default.fileExists(atPath: policy, isDirectory: &isDir), isDir.boolValue {
    files = try FileManager.default.contentsOfDirectory(atPath: policy).filter { $0.hasSuffix(".yaml") }
        .sorted().map { policy + "/" + $0 }
}
    let wlan = Link(
        index: 2, name: "wlan0", kind: .wlan, kindSource: "bench", up: true, running: true, ssid: "Home")
    let wwan = Link(index: 3, name: "wwan0", kind: .wwan, kindSource: "bench", up: true, running: true)
    var wlanDown = wlan
    wlanDown.up = false
    wlanDown.running = false
    let before = LinkSnapshot(
        links: [wlan, wwan],
        defaultRoutes: [
            DefaultRoute(family: .ipv4, linkIndex: 2, link: "wlan0", metric: 100),
            DefaultRoute(family: .ipv4, linkIndex: 3, link: "wwan0", metric: 1000),
        ])
    let after = LinkSnapshot(
        links: [wlanDown, wwan],
        defaultRoutes: [
            DefaultRoute(family: .ipv4, linkIndex: 3, link: "wwan0", metric: 1000)
        ], sequence: 1)
    let jobList = (0..<jobs).map { i in
        JobInfo(
            id: "job\(i)", size: i % 10 == 0 ? nil : Int64(i % 97) << 20, priority: i % 5,
            tags: i % 3 == 0 ? ["os"] : [], allowMetered: i % 11 == 0)
    }
    let now = Date(timeIntervalSince1970: 1_795_000_000)
    let zone = TimeZone(identifier: "Europe/Berlin")!
    print(
        "\(jobs) jobs, median of \(rounds) rounds; the link change: wlan0 (primary) goes down, wwan0 remains.")
    print("")
    print(
        "| policy | rules | \(jobs) jobs before | \(jobs) jobs after | total | per decision | \(jobs) jobs, decide() unshared |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for file in files {
        let policySet = try PolicySet.load(path: file)
        var beforeTimes: [Duration] = []
        var afterTimes: [Duration] = []
        var unshared: [Duration] = []
        var runs = 0
        for _ in 0..<rounds {
            let clock = ContinuousClock()
            var t0 = clock.now
            let ctxA = policySet.context(snapshot: before, usage: Usage(), now: now, timeZone: zone)
            for job in jobList where ctxA.decide(job: job).action == .run { runs += 1 }
            beforeTimes.append(clock.now - t0)
            t0 = clock.now
            let ctxB = policySet.context(snapshot: after, usage: Usage(), now: now, timeZone: zone)
            for job in jobList where ctxB.decide(job: job).action == .run { runs += 1 }
            afterTimes.append(clock.now - t0)
            t0 = clock.now
            for job in jobList
            where policySet.decide(job: job, snapshot: after, usage: Usage(), now: now, timeZone: zone).action
                == .run
            {
                runs += 1
            }
            unshared.append(clock.now - t0)
        }
        func median(_ d: [Duration]) -> Duration { d.sorted()[d.count / 2] }
        let total = median(beforeTimes) + median(afterTimes)
        let perDecision = total / (2 * max(1, jobs))
        let cells = [
            URL(fileURLWithPath: file).lastPathComponent, "\(policySet.rules.count)", ms(median(beforeTimes)),
            ms(median(afterTimes)), ms(total), String(format: "%.2f µs", perDecision.seconds * 1e6),
            ms(median(unshared)),
        ]
        print("| " + cells.joined(separator: " | ") + " |")
        if runs < 0 { print(runs) }  // keeps the loop from being optimised away
    }
    print("")
    print("Goal: total (\(jobs) jobs decided before and after the change) <= 50 ms.")
