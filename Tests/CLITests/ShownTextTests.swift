import Foundation
import MeterwiseClient
import TestSupport
import Testing

/// What another user or a server wrote reaches a terminal only with its control characters escaped (C0,
/// DEL and C1: U+009B is a one-character CSI, U+009D an OSC), and JSON output stays the same JSON.
@Suite struct ShownTextTests {
    @Test(arguments: [
        ("plain text", "plain text"),
        ("café ✓ 日本", "café ✓ 日本"),
        ("a\u{1B}[2Jb", "a\\x1b[2Jb"),
        ("gzip\u{9B}31mred", "gzip\\x9b31mred"),
        ("\u{9D}0;title\u{07}", "\\x9d0;title\\x07"),
        ("del\u{7F}", "del\\x7f"),
        ("c1 start \u{80} end \u{9F}", "c1 start \\x80 end \\x9f"),
        ("two\nlines\r\ttab", "two\\nlines\\r\\ttab"),
        ("nul\u{0}", "nul\\x00"),
    ])
    func escapesEveryControlCharacter(text: String, shown: String) {
        #expect(ShownText.escaped(text) == shown)
        #expect(!ShownText.hasControl(ShownText.escaped(text)))
    }

    @Test func nothingAboveC1IsTouched() {
        for value in UInt32(0xA0)...0x2FF {
            let scalar = Unicode.Scalar(value)!
            #expect(!ShownText.isControl(scalar))
        }
        for value in UInt32(0)...0x9F where !(0x20...0x7E).contains(value) {
            #expect(ShownText.isControl(Unicode.Scalar(value)!), "U+\(String(value, radix: 16))")
        }
    }

    /// Seeded (`SHOWN_TEXT_SEED` replays): random text, controls and non-ASCII mixed, never shows a control,
    /// keeps every other character, and its JSON form decodes to the same text.
    @Test func randomTextNeverShowsAControl() throws {
        let seed = SplitMix.seed(from: "SHOWN_TEXT_SEED")
        print("ShownTextTests seed \(seed)")
        var random = SplitMix(seed: seed)
        let pools: [ClosedRange<UInt32>] = [
            0...0x20, 0x21...0x7E, 0x7F...0xA0, 0xA1...0x2FF, 0x2000...0x206F, 0x1F600...0x1F64F,
        ]
        for _ in 0..<2_000 {
            var text = ""
            for _ in 0..<Int.random(in: 0...40, using: &random) {
                let pool = pools.randomElement(using: &random)!
                text.unicodeScalars.append(Unicode.Scalar(UInt32.random(in: pool, using: &random))!)
            }
            let shown = ShownText.escaped(text)
            #expect(!ShownText.hasControl(shown), "seed \(seed): \(text.debugDescription)")
            if !ShownText.hasControl(text) { #expect(shown == text, "seed \(seed)") }
            // Everything from U+00A0 up is kept as it was, in order.
            #expect(
                shown.unicodeScalars.filter { $0.value >= 0xA0 }.elementsEqual(
                    text.unicodeScalars.filter { $0.value >= 0xA0 }))
            let json = ShownText.json(
                String(decoding: try JSONSerialization.data(withJSONObject: [text]), as: UTF8.self))
            #expect(!ShownText.hasControl(json), "seed \(seed): \(text.debugDescription)")
            #expect(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String] == [text], "seed \(seed)")
        }
    }

    @Test func jsonKeepsItsValueAndLosesItsControls() throws {
        let value = ["error": "Content-Encoding gzip\u{9B}31m \u{9D}8;;x\u{7F}", "nested": "ok\n"]
        let encoded = String(
            decoding: try JSONSerialization.data(withJSONObject: value, options: [.prettyPrinted]), as: UTF8.self)
        // JSONSerialization leaves C1 raw.
        #expect(ShownText.hasControl(encoded.replacingOccurrences(of: "\n", with: "")))
        let shown = ShownText.json(encoded)
        #expect(!shown.unicodeScalars.contains { ShownText.isControl($0) && $0 != "\n" })
        #expect(shown.contains("\\u009b") && shown.contains("\\u009d") && shown.contains("\\u007f"))
        let decoded = try #require(try JSONSerialization.jsonObject(with: Data(shown.utf8)) as? [String: String])
        #expect(decoded == value)
    }
}

/// Who may answer a client: the kernel's word on the listener (SO_PEERCRED), not the socket path's owner.
@Suite struct DaemonPeerTests {
    @Test(arguments: [
        (UInt32(0), UInt32(1000), true),  // the system daemon, for a user
        (UInt32(0), UInt32(0), true),  // the system daemon, for root
        (UInt32(1000), UInt32(1000), true),  // the user's own daemon
        (UInt32(65534), UInt32(0), false),  // another user's listener, for root
        (UInt32(65534), UInt32(1000), false),
        (UInt32(1000), UInt32(0), false),  // root never talks to a user's listener
    ])
    func trustsOnlyRootOrTheCaller(listener: UInt32, caller: UInt32, trusted: Bool) {
        let refusal = DaemonPeer(pid: 42, uid: listener, gid: listener).refusal(caller: caller, socket: "/run/x.sock")
        #expect((refusal == nil) == trusted)
        if let refusal {
            #expect(refusal.contains("uid \(listener)") && refusal.contains("nothing was sent"), "\(refusal)")
        }
    }
}

/// A job's tags are bounded, and a job's files may not be in the kernel's trees.
@Suite struct JobSpecBoundsTests {
    static func spec(tags: [String] = [], destination: String = "/srv/x.iso", caFile: String? = nil) -> JobSpec {
        JobSpec(url: "https://example.org/x.iso", destination: destination, tags: tags, caFile: caFile)
    }

    @Test(arguments: [
        (["os", "apt", "user:alice", "a.b-c_d/e+f@g"], nil as String?),
        (Array(repeating: "t", count: JobSpec.maxTags), nil),
        (Array(repeating: "t", count: JobSpec.maxTags + 1), "at most 16 per job"),
        ([String(repeating: "x", count: JobSpec.maxTagBytes)], nil),
        ([String(repeating: "x", count: JobSpec.maxTagBytes + 1)], "1 to 64 bytes"),
        ([""], "1 to 64 bytes"),
        (["a,b"], "only letters, digits"),
        (["a b"], "only letters, digits"),
        (["caf\u{E9}"], "only letters, digits"),
        (["x\u{9B}31m"], "only letters, digits"),
    ])
    func tagsAreBounded(tags: [String], problem: String?) {
        let found = Self.spec(tags: tags).problem
        if let problem {
            #expect(found?.contains(problem) == true, "\(String(describing: found))")
            #expect(found.map { !ShownText.hasControl($0) } ?? true)
        } else {
            #expect(found == nil)
        }
    }

    @Test(arguments: [
        ("/proc/self/fd/3", "/proc"),
        ("/proc", "/proc"),
        ("//proc/1/environ", "/proc"),
        ("/./proc/self/fd/0", "/proc"),
        ("/tmp/../proc/self/fd/5", "/proc"),
        ("/dev/fd/5", "/dev"),
        ("/dev/stdin", "/dev"),
        ("/sys/kernel/x", "/sys"),
        ("/etc/ssl/ca.pem", nil as String?),
        ("/home/u/process/ca.pem", nil),
        ("/procfs/ca.pem", nil),
    ])
    func kernelTreesAreRefusedForFilesAndDestinations(path: String, area: String?) {
        #expect(JobSpec.kernelArea(path) == area)
        let ca = Self.spec(caFile: path).problem
        let destination = Self.spec(destination: path).problem
        if let area {
            #expect(ca?.contains("ca_file may not be under \(area)") == true, "\(String(describing: ca))")
            #expect(
                destination?.contains("destination may not be under \(area)") == true,
                "\(String(describing: destination))")
        } else {
            #expect(ca == nil)
            #expect(destination == nil)
        }
    }
}
