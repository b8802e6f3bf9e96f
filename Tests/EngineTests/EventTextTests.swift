import Engine
import MeterwiseClient
import Testing

/// What the event stream says in words: durations a person reads.
struct EventTextTests {
    @Test(arguments: [
        (Duration.nanoseconds(4_999_850_045), "resuming in 5 s"),
        (.seconds(5), "resuming in 5 s"),
        (.milliseconds(1), "resuming in 1 s"),
        (.zero, "resuming in 0 s"),
        (.seconds(-3), "resuming in 0 s"),
    ])
    func waitingSaysWholeSeconds(_ remaining: Duration, _ text: String) throws {
        let body = try #require(ControlAPI.body(for: .waiting(job: "j", remaining: remaining)))
        #expect(body.reason == text)
    }
}
