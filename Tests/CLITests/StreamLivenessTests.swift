import MeterwiseClient
import Testing

/// `StreamLiveness`: the announced keep-alive interval (untrusted), and when silence means a lost daemon.
struct StreamLivenessTests {
    @Test(arguments: [
        ("15", Duration.seconds(15)), ("0.2", .milliseconds(200)), ("0.200", .milliseconds(200)),
        ("3600", .seconds(3600)),
        // Anything else is the default: missing, empty, not a number, out of range, not finite.
        ("", .seconds(15)), ("abc", .seconds(15)), ("-1", .seconds(15)), ("0", .seconds(15)), ("0.01", .seconds(15)),
        ("3601", .seconds(15)), ("1e308", .seconds(15)), ("nan", .seconds(15)), ("inf", .seconds(15)),
        ("9223372036854775808", .seconds(15)),
    ])
    func theHeaderIsReadWithinBounds(header: String, interval: Duration) {
        #expect(StreamLiveness(header: header).interval == interval)
    }

    @Test func noHeaderIsTheDefault() {
        #expect(StreamLiveness(header: nil).interval == StreamLiveness.defaultInterval)
    }

    @Test(arguments: [
        (Duration.zero, false), (.milliseconds(2999), false), (.seconds(3), true), (.seconds(90), true),
    ])
    func silenceOfThreeIntervalsIsALostDaemon(silence: Duration, lost: Bool) {
        let liveness = StreamLiveness(interval: .seconds(1))
        #expect(liveness.isLost(after: silence) == lost)
        #expect(liveness.nextLook(after: silence) >= .milliseconds(10))
        if !lost { #expect(silence + liveness.nextLook(after: silence) >= liveness.limit) }
    }
}
