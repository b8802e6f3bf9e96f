import PropertyBased
import Testing

@testable import ConfigKit

/// Hostile numbers for every unit parser: each gives a value within the global cap, `.tooLarge` or
/// `.malformed`, never a trap (the old duration parser trapped converting 1e10 s to nanoseconds).
@Suite struct UnitsBoundsTests {
    static let hostile = [
        "10000000000s", "9223372036854775807s", "9223372036854775808s", "99999999999999999999999999d",
        "106752d", "36501d", "1e400s", "1e19", "nan", "NaNs", "inf", "infs", "-inf", "-5s", "-1", "+5s",
        "0x10s", "1.5.5s", "..5s", "5.s", ".s", "18446744073709551616", "9223372036854775807",
        "9223372036854775807TiB", "8589934592GiB", "1152921504606846977", "99999999999999999999.9999KiB",
        "1.99999999999999999999999999999TB", "٣s", "５s", "1h\u{0}", "\u{FEFF}5s",
        String(repeating: "9", count: 5000) + "s",
    ]

    @Test(arguments: hostile)
    func durationsAreBoundedOrRefused(text: String) {
        switch Units.readDuration(text) {
        case .value(let value): #expect(value >= .zero && value <= Units.maxDuration, "\(text) -> \(value)")
        case .tooLarge, .malformed: break
        }
    }

    @Test(arguments: hostile)
    func sizesAndRatesAreBoundedOrRefused(text: String) {
        for reading in [Units.readBytes(text), Units.readRate(text), Units.readRate(text + "/s")] {
            if case .value(let value) = reading {
                #expect(value >= 0 && value <= Units.maxBytes, "\(text) -> \(value)")
            }
        }
        if let limit = Units.parseRateLimit(text) { #expect(limit > 0 && limit <= Units.maxBytes) }
    }

    @Test(arguments: [
        ("10000000000s", Units.Reading<Duration>.tooLarge), ("36501d", .tooLarge),
        ("36500d", .value(.seconds(3_153_600_000))),
        ("9223372036854775807s", .tooLarge), ("1e400s", .malformed), ("nan", .malformed), ("-5s", .malformed),
        ("1.5s", .value(.milliseconds(1500))), ("1h30m", .value(.seconds(5400))),
        ("0.0000000005s", .value(.nanoseconds(1))),
        ("36499d23h59m60s", .value(.seconds(3_153_600_000))), ("36499d24h1s", .tooLarge),
    ])
    func durationReadings(text: String, expected: Units.Reading<Duration>) {
        #expect(Units.readDuration(text) == expected)
    }

    @Test(arguments: [
        ("1024PiB", Units.Reading<Int64>.malformed), ("1152921504606846976", .value(1 << 60)),
        ("1152921504606846977", .tooLarge), ("1048576TiB", .value(1 << 60)), ("1048577TiB", .tooLarge),
        ("9223372036854775807", .tooLarge), ("1.5GiB", .value(3 << 29)), ("0.5B", .value(1)), ("1e3MB", .malformed),
    ])
    func sizeReadings(text: String, expected: Units.Reading<Int64>) {
        #expect(Units.readBytes(text) == expected)
    }

    /// Random digit strings, with or without a fraction, in every unit: a value is exactly the decimal
    /// times the unit (checked against a Double within rounding), or the text is refused.
    @Test func randomNumbersInEveryUnitNeverTrap() async {
        let durationUnits: [(String, Double)] = [
            ("ms", 1e-3), ("s", 1), ("m", 60), ("min", 60), ("h", 3600), ("d", 86400),
        ]
        let sizeUnits: [(String, Double)] =
            Units.byteUnits.map { ($0.0, Double($0.1)) } + [("", 1)]
        await propertyCheck(
            count: 3000, input: Gen.int(in: 1...30), Gen.int(in: 0...12), Gen.int(in: 0...1000), Gen.int(in: 0...100)
        ) { wholeDigits, fractionDigits, seed, unitPick in
            var state = UInt64(seed) &* 0x9E37_79B9_7F4A_7C15 &+ 1
            func digits(_ n: Int) -> String {
                String(
                    (0..<n).map { _ in
                        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                        return Character(String((state >> 33) % 10))
                    })
            }
            let number = digits(wholeDigits) + (fractionDigits > 0 ? "." + digits(fractionDigits) : "")
            let approx = Double(number)!
            let (dUnit, dFactor) = durationUnits[unitPick % durationUnits.count]
            switch Units.readDuration(number + dUnit) {
            case .value(let d):
                #expect(d <= Units.maxDuration)
                #expect(abs(d.seconds - approx * dFactor) <= max(1e-6, approx * dFactor * 1e-9), "\(number)\(dUnit)")
            case .tooLarge: #expect(approx * dFactor > Units.maxDuration.seconds * 0.999_999, "\(number)\(dUnit)")
            case .malformed: Issue.record("\(number)\(dUnit) is well-formed")
            }
            let (sUnit, sFactor) = sizeUnits[unitPick % sizeUnits.count]
            let sizeText = sUnit.isEmpty && fractionDigits > 0 ? number + "B" : number + sUnit
            switch Units.readBytes(sizeText) {
            case .value(let b):
                #expect(b <= Units.maxBytes)
                #expect(
                    abs(Double(b) - approx * (sUnit.isEmpty ? 1 : sFactor)) <= max(1, Double(b) * 1e-9), "\(sizeText)")
            case .tooLarge: #expect(approx * sFactor > Double(Units.maxBytes) * 0.999_999, "\(sizeText)")
            case .malformed: Issue.record("\(sizeText) is well-formed")
            }
        }
    }

    @Test(arguments: [Double.nan, .infinity, -.infinity, 1e300, -1e300, 9.3e18, -9.3e18, .greatestFiniteMagnitude])
    func formattingNeverTraps(value: Double) {
        _ = Units.formatted(value, digits: 1)
        _ = Units.formatted(value, digits: 0)
    }

    @Test(arguments: [
        Duration.seconds(Int64.max), .seconds(Int64.min), .zero - .seconds(90), .nanoseconds(1), Units.maxDuration,
    ])
    func formattingDurationsNeverTraps(duration: Duration) {
        #expect(!Units.formatDuration(duration).isEmpty)
    }
}
