import ConfigKit
import Testing

@Suite struct UnitsTests {
    @Test(arguments: [
        ("512", Int64(512)), ("4096B", 4096), ("5MiB", 5 << 20), ("1.5GiB", 3 << 29),
        ("700MB", 700_000_000), ("512KiB", 512 << 10), ("2K", 2048), ("1 MiB", 1 << 20),
    ])
    func parsesBytes(text: String, bytes: Int64) {
        #expect(Units.parseBytes(text) == bytes)
    }

    @Test(arguments: ["", "5XB", "MiB", "-5MiB", "5MiBs", "1e3MB", "five"])
    func rejectsBadBytes(text: String) {
        #expect(Units.parseBytes(text) == nil)
    }

    @Test(arguments: [
        ("200ms", Duration.milliseconds(200)), ("5s", .seconds(5)), ("1h30m", .seconds(5400)),
        ("2d", .seconds(172_800)), ("1.5s", .milliseconds(1500)), ("0", .zero), ("10m", .seconds(600)),
    ])
    func parsesDurations(text: String, duration: Duration) {
        #expect(Units.parseDuration(text) == duration)
    }

    @Test(arguments: ["", "5", "5x", "1h1h", "5s1h", "h", "1.2.3s"])
    func rejectsBadDurations(text: String) {
        #expect(Units.parseDuration(text) == nil)
    }

    @Test func parsesRates() {
        let rate = Units.parseRate("512KiB/s")
        #expect(rate == Int64(524_288), "\(String(describing: rate))")
        #expect(Units.parseRate("1MiB/s") == 1 << 20)
        #expect(Units.parseRate("512KiB") == nil)
        #expect(Units.parseRate("0/s") == nil)
    }

    @Test func formats() {
        #expect(Units.formatBytes(512) == "512 B")
        #expect(Units.formatBytes(5 << 20) == "5.00 MiB")
        #expect(Units.formatBytes(700 << 20) == "700.0 MiB")
        #expect(Units.formatDuration(.milliseconds(250)) == "250ms")
        #expect(Units.formatDuration(.seconds(8)) == "8s")
        #expect(Units.formatDuration(.seconds(125)) == "2m05s")
    }
}
