import Testing

@testable import Transfer

/// What a download that gives up says it keeps: only what is on disk.
struct GiveUpTextTests {
    @Test(arguments: [
        (Int64(0), "Nothing was received", "checkpoint is saved"),
        (Int64(4096), "The checkpoint is saved (4096 bytes)", "Nothing was received"),
    ])
    func retriesSayWhatIsKept(_ done: Int64, _ says: String, _ never: String) {
        let text = GiveUpText.retriesExhausted(retries: 8, reason: "Connection refused", bytesDone: done)
        #expect(text.hasPrefix("Gave up after 8 retries: Connection refused."))
        #expect(text.contains(says) && !text.contains(never), "\(text)")
        let sentence = GiveUpText.retriesExhausted(retries: 8, reason: "Connection refused.", bytesDone: done)
        #expect(sentence == text, "a reason that ends in a period gets no second one")
    }

    @Test func restartsForWantOfValidatorsNameTheFailureNotAChangingObject() {
        let slow = "the server sent 10 bytes in 1 s, below the low-speed limit of 1024 bytes/s"
        let text = GiveUpText.restartsExhausted(restarts: 4, reason: .unvalidated, failure: slow)
        #expect(text.contains(slow) && text.contains("no validator") && !text.contains("keeps changing"), "\(text)")
        let changed = GiveUpText.restartsExhausted(restarts: 4, reason: .objectChanged, failure: nil)
        #expect(changed.contains("keeps changing"), "\(changed)")
    }
}
