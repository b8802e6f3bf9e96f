import Links
import TestSupport
import Testing

@testable import NetlinkLinks

/// nl80211's answers parsed from recorded bytes (this kernel has no radio): the interface dump's SSID,
/// the BSS dump's associated BSSID, and every malformed buffer refused without a crash.
@Suite struct Nl80211ParsingTests {
    typealias B = NetlinkBytes

    /// A `GET_INTERFACE` dump reply as an x86-64 kernel sends it (nl80211_send_iface's attribute order):
    /// wlan0, a station connected to "CafeNet" on 2412 MHz.
    static let interfaceReply = B.hex(
        """
        a8 00 00 00 1c 00 02 00 a1 f3 50 66 40 1f 00 00          // nlmsghdr: 168 bytes, family 0x1c, MULTI
        07 01 00 00                                              // genlmsghdr: NEW_INTERFACE, version 1
        08 00 03 00 03 00 00 00                                  // IFINDEX 3
        0a 00 04 00 77 6c 61 6e 30 00 00 00                      // IFNAME "wlan0"
        08 00 05 00 02 00 00 00                                  // IFTYPE station
        08 00 01 00 00 00 00 00                                  // WIPHY 0
        0c 00 99 00 01 00 00 00 00 00 00 00                      // WDEV 1
        0a 00 06 00 02 00 00 00 01 00 00 00                      // MAC 02:00:00:00:01:00
        08 00 2e 00 05 00 00 00                                  // GENERATION 5
        05 00 53 00 00 00 00 00                                  // 4ADDR 0
        08 00 26 00 6c 09 00 00                                  // WIPHY_FREQ 2412
        08 00 22 01 00 00 00 00                                  // WIPHY_FREQ_OFFSET 0
        08 00 9f 00 01 00 00 00                                  // CHANNEL_WIDTH 20 MHz
        08 00 a0 00 6c 09 00 00                                  // CENTER_FREQ1 2412
        08 00 62 00 d0 07 00 00                                  // WIPHY_TX_POWER_LEVEL 2000 mBm
        0b 00 34 00 43 61 66 65 4e 65 74 00                      // SSID "CafeNet"
        14 00 09 01 08 00 01 00 00 00 00 00 08 00 02 00 00 00 00 00  // TXQ_STATS (nested)
        """)

    /// One entry of the `GET_SCAN` dump for wlan0: the BSS it is associated with (status 1).
    static let bssEntry = B.hex(
        """
        9c 00 00 00 1c 00 02 00 a2 f3 50 66 40 1f 00 00          // nlmsghdr: 156 bytes, family 0x1c, MULTI
        22 01 00 00                                              // genlmsghdr: NEW_SCAN_RESULTS, version 1
        08 00 2e 00 05 00 00 00                                  // GENERATION 5
        08 00 03 00 03 00 00 00                                  // IFINDEX 3
        0c 00 99 00 01 00 00 00 00 00 00 00                      // WDEV 1
        6c 00 2f 00                                              // BSS (nested, 104 bytes)
        0a 00 01 00 3c 37 86 5e a1 04 00 00                      // BSS_BSSID
        0c 00 03 00 c1 84 6e 1f 2d 00 00 00                      // BSS_TSF
        13 00 06 00 00 07 43 61 66 65 4e 65 74 01 04 82 84 8b 96 00  // BSS_INFORMATION_ELEMENTS
        06 00 04 00 64 00 00 00                                  // BSS_BEACON_INTERVAL 100
        06 00 05 00 31 04 00 00                                  // BSS_CAPABILITY
        08 00 02 00 6c 09 00 00                                  // BSS_FREQUENCY 2412
        08 00 0a 00 78 00 00 00                                  // BSS_SEEN_MS_AGO 120
        0c 00 0f 00 20 4e 1c f5 a9 03 00 00                      // BSS_LAST_SEEN_BOOTTIME
        08 00 07 00 a4 ed ff ff                                  // BSS_SIGNAL_MBM -4700
        08 00 09 00 01 00 00 00                                  // BSS_STATUS associated
        """)

    @Test func recordedInterfaceReplyGivesNameTypeAndSSID() throws {
        #expect(Self.interfaceReply.count == 168)
        let message = try #require(GenericNetlinkMessage(Self.interfaceReply))
        #expect(message.command == Nl80211.Command.newInterface)
        #expect(message.type == 0x1c)
        let interface = try #require(WirelessInterface(message.attributes))
        #expect(interface == WirelessInterface(index: 3, name: "wlan0", type: 2, ssid: Array("CafeNet".utf8)))
        #expect(interface.isClient)
    }

    @Test func recordedBSSEntryGivesTheAssociatedBSSID() throws {
        #expect(Self.bssEntry.count == 156)
        let message = try #require(GenericNetlinkMessage(Self.bssEntry))
        #expect(message.command == Nl80211.Command.newScanResults)
        let bss = try #require(ScannedBSS(message.attributes))
        #expect(bss.interfaceIndex == 3)
        #expect(bss.bssid == [0x3c, 0x37, 0x86, 0x5e, 0xa1, 0x04])
        #expect(bss.isCurrent)
    }

    @Test func bothDumpsGiveTheLinkHint() throws {
        let state = WirelessState(
            interfaceMessages: [try #require(GenericNetlinkMessage(Self.interfaceReply))],
            scanMessages: [try #require(GenericNetlinkMessage(Self.bssEntry))])
        let expected = LinkHint(ssid: "CafeNet", bssid: "3c:37:86:5e:a1:04")
        #expect(state.hints == LinkHints(byName: ["wlan0": expected], sources: ["nl80211"]))
    }

    @Test func theHelperEncodesLikeTheKernel() {
        let built = B.message(
            command: 34,
            attributes: B.u32(46, 5) + B.u32(3, 3) + B.attribute(153, B.host(UInt64(1)))
                + B.attribute(47, Array(Self.bssEntry[52...])), sequence: 0x6650_f3a2)
        #expect(built == Self.bssEntry)
    }

    /// Only the BSS the interface is associated with (or the IBSS it joined) is its BSSID; one it is merely
    /// authenticated with, or only saw in a scan, is not.
    @Test(
        arguments: [
            (nil, nil), (Nl80211.BSSStatus.authenticated, nil), (Nl80211.BSSStatus.associated, "0a:00:00:00:00:01"),
            (Nl80211.BSSStatus.ibssJoined, "0a:00:00:00:00:01"), (UInt32(7), nil),
        ] as [(UInt32?, String?)])
    func onlyTheCurrentBSSCounts(status: UInt32?, expected: String?) {
        let seen = B.bss(interface: 3, bssid: [0x3c, 0, 0, 0, 0, 9], status: nil)
        let tested = B.bss(interface: 3, bssid: [0x0a, 0, 0, 0, 0, 1], status: status)
        let state = Self.state(
            interfaces: [B.interface(index: 3, name: "wlan0", type: 2)],
            scans: [seen, tested, B.bss(interface: 3, bssid: [0x3c, 0, 0, 0, 0, 10], status: 0)])
        #expect(state.hints.byName["wlan0"]?.bssid == expected)
    }

    /// A client's SSID is the network this link uses; an access point's (or P2P GO's, mesh's, monitor's) is
    /// not, so those give no hint even with an SSID and a BSS.
    @Test(
        arguments: [
            (1, true), (2, true), (3, false), (6, false), (7, false), (8, true), (9, false), (10, false),
        ] as [(UInt32, Bool)])
    func onlyClientInterfacesGiveHints(type: UInt32, hinted: Bool) {
        let state = Self.state(
            interfaces: [B.interface(index: 4, name: "wlp2s0", type: type, ssid: Array("Home".utf8))],
            scans: [B.bss(interface: 4, bssid: [0x3c, 1, 2, 3, 4, 5], status: 1)])
        let expected = hinted ? ["wlp2s0": LinkHint(ssid: "Home", bssid: "3c:01:02:03:04:05")] : [:]
        #expect(state.hints.byName == expected)
        #expect(state.hints.sources == ["nl80211"])
    }

    @Test func noWirelessInterfaceStillRuns() {
        #expect(WirelessState().hints == LinkHints(byName: [:], sources: ["nl80211"]))
        let disconnected = Self.state(interfaces: [B.interface(index: 3, name: "wlan0", type: 2)], scans: [])
        #expect(disconnected.hints == LinkHints(byName: [:], sources: ["nl80211"]))
    }

    /// SSIDs are bytes: UTF-8 shows as text, anything else as lowercase hex (as NetworkManager's are shown);
    /// an empty or over-long (> 32 bytes) SSID attribute gives no SSID.
    @Test(
        arguments: [
            (Array("Café ☕".utf8), "Café ☕"), ([0xff, 0x00, 0x41], "ff0041"), (Array("a\nb".utf8), "610a62"),
            ([], nil), (Array(repeating: 0x41, count: 32), String(repeating: "A", count: 32)),
            (Array(repeating: 0x41, count: 33), nil),
        ] as [([UInt8], String?)])
    func ssidRendering(bytes: [UInt8], expected: String?) {
        let state = Self.state(interfaces: [B.interface(index: 3, name: "wlan0", type: 2, ssid: bytes)], scans: [])
        #expect(state.hints.byName["wlan0"]?.ssid == expected)
    }

    @Test func nestedFlagIsMaskedOff() {
        let state = Self.state(
            interfaces: [B.interface(index: 3, name: "wlan0", type: 2)],
            scans: [B.bss(interface: 3, bssid: [0x3c, 1, 2, 3, 4, 5], status: 1, nested: true)])
        #expect(state.bssids[3] == [0x3c, 1, 2, 3, 4, 5])
    }

    /// Memory alignment does not matter: the same bytes at an odd offset parse the same.
    @Test func unalignedSliceParsesTheSame() throws {
        let shifted = [0x55] + Self.interfaceReply
        let message = try #require(GenericNetlinkMessage(shifted[1...]))
        #expect(WirelessInterface(message.attributes)?.name == "wlan0")
    }

    @Test(
        arguments: [
            ("zero nla_len", [0, 0, 3, 0, 3, 0, 0, 0]),
            ("nla_len below the header", [3, 0, 3, 0, 3, 0, 0, 0]),
            ("nla_len past the end", [12, 0, 3, 0, 3, 0, 0, 0]),
            ("huge nla_len", [0xff, 0xff, 3, 0, 3, 0, 0, 0]),
            ("a header cut short", [8, 0, 3, 0, 3, 0, 0, 0, 8, 0]),
            ("trailing bytes", [8, 0, 3, 0, 3, 0, 0, 0, 0]),
            ("half a header", [8, 0]),
        ] as [(String, [UInt8])])
    func malformedAttributesAreRefused(_ what: String, bytes: [UInt8]) {
        #expect(NetlinkAttributes(bytes) == nil, "\(what)")
    }

    @Test func wrongSizedFieldsAreRefused() {
        let shortIndex = B.attribute(3, [3, 0]) + B.string(4, "wlan0") + B.u32(5, 2)
        #expect(WirelessInterface(NetlinkAttributes(shortIndex)!) == nil)
        let noName = B.u32(3, 3) + B.u32(5, 2)
        #expect(WirelessInterface(NetlinkAttributes(noName)!) == nil)
        let emptyName = B.u32(3, 3) + B.attribute(4, [0]) + B.u32(5, 2)
        #expect(WirelessInterface(NetlinkAttributes(emptyName)!) == nil)
        let longName = B.u32(3, 3) + B.string(4, String(repeating: "w", count: 16)) + B.u32(5, 2)
        #expect(WirelessInterface(NetlinkAttributes(longName)!) == nil)
        let shortBSSID = B.u32(3, 3) + B.attribute(47, B.attribute(1, [1, 2, 3, 4, 5]) + B.u32(9, 1))
        #expect(ScannedBSS(NetlinkAttributes(shortBSSID)!) == nil)
        let badNest = B.u32(3, 3) + B.attribute(47, [0xff, 0, 1, 0, 1, 2, 3, 4])
        #expect(ScannedBSS(NetlinkAttributes(badNest)!) == nil)
        #expect(WirelessInterface(NetlinkAttributes([UInt8]())!) == nil)
    }

    @Test func everyTruncatedMessageIsRefused() {
        for fixture in [Self.interfaceReply, Self.bssEntry] {
            for length in 0..<fixture.count {
                #expect(GenericNetlinkMessage(fixture[..<length]) == nil, "cut at \(length)")
            }
        }
    }

    /// Cutting the attributes anywhere never gives a wrong SSID: either nothing, or the whole one, or none.
    @Test func truncatedAttributesNeverGiveAWrongSSID() {
        let attributes = Array(Self.interfaceReply[20...])
        for length in 0...attributes.count {
            guard let parsed = NetlinkAttributes(attributes[..<length]), let interface = WirelessInterface(parsed)
            else { continue }
            #expect(interface.ssid == nil || interface.ssid == Array("CafeNet".utf8), "cut at \(length)")
        }
    }

    @Test func datagramsSplitIntoMessages() {
        let done =
            B.host(UInt32(20)) + B.host(UInt16(3)) + B.host(UInt16(2)) + B.host(UInt32(1)) + B.host(UInt32(0))
            + [0, 0, 0, 0]
        let datagram = Self.interfaceReply + Self.bssEntry + done
        #expect(GenericNetlinkMessage.messages(in: datagram[...]).map(\.command) == [7, 34])
        var broken = datagram
        broken[168] = 0xff  // the second message claims more than the datagram holds
        #expect(GenericNetlinkMessage.messages(in: broken[...]).map(\.command) == [7])
        #expect(GenericNetlinkMessage.messages(in: datagram[..<100]).isEmpty)
    }

    @Test(arguments: [
        (Nl80211.Command.connect, true), (Nl80211.Command.disconnect, true), (Nl80211.Command.roam, true),
        (Nl80211.Command.newInterface, true), (Nl80211.Command.delInterface, true), (UInt8(59), false),
        (Nl80211.Command.newScanResults, false), (UInt8(0), false),
    ])
    func eventsThatMeanReadAgain(command: UInt8, reads: Bool) {
        #expect(WirelessState.changes(after: command) == reads)
    }

    /// Random cuts and byte flips of the recorded messages (a seeded generator: set NL80211_FUZZ_SEED to
    /// replay): never a crash, never an out-of-bounds read, never an SSID over 32 bytes or a BSSID not 6.
    @Test func fuzzedMessagesNeverCrash() {
        let seed = SplitMix.seed(from: "NL80211_FUZZ_SEED")
        var random = SplitMix(seed: seed)
        var parsed = 0
        for round in 0..<20_000 {
            var bytes = round % 2 == 0 ? Self.interfaceReply : Self.bssEntry
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                let position = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0..<4, using: &random) {
                case 0: bytes[position] = UInt8.random(in: 0...255, using: &random)
                case 1: bytes[position] ^= 1 << UInt8.random(in: 0..<8, using: &random)
                case 2: bytes = Array(bytes[..<max(position, 1)])
                default:
                    // Rewrite a length to something near it: off by a few, or the message's own size.
                    let shift = Int.random(in: -8...8, using: &random)
                    bytes[position] = UInt8(truncatingIfNeeded: Int(bytes[position]) + shift)
                }
            }
            let messages = GenericNetlinkMessage.messages(in: bytes[...])
            let state = WirelessState(interfaceMessages: messages, scanMessages: messages)
            for interface in state.interfaces {
                #expect((interface.ssid?.count ?? 1) <= 32, "seed \(seed) round \(round)")
            }
            for bssid in state.bssids.values { #expect(bssid.count == 6, "seed \(seed) round \(round)") }
            parsed += state.interfaces.count + state.bssids.count
            _ = state.hints
            _ = NetlinkAttributes(bytes[min(20, bytes.count)...]).map { WirelessInterface($0) }
        }
        #expect(parsed > 1000, "the mutations should leave many messages readable (seed \(seed))")
    }

    static func state(interfaces: [[UInt8]], scans: [[UInt8]]) -> WirelessState {
        WirelessState(
            interfaceMessages: interfaces.compactMap { GenericNetlinkMessage(B.message(command: 7, attributes: $0)) },
            scanMessages: scans.compactMap { GenericNetlinkMessage(B.message(command: 34, attributes: $0)) })
    }
}
