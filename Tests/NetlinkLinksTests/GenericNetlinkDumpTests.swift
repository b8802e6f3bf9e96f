import Testing

@testable import NetlinkLinks

/// The nl80211 source's sockets and dumps against the real kernel. This kernel has no nl80211, so the same
/// code runs on the generic netlink controller (`nlctrl`), which every kernel has: request encoding, libnl's
/// receive loop and callback, and the parsing of what came back.
@Suite struct GenericNetlinkDumpTests {
    @Test func dumpsTheControllerFamilies() throws {
        let connection = try #require(try Nl80211Connection.open(family: "nlctrl", groups: ["notify"]))
        let messages = try connection.dump(3)  // CTRL_CMD_GETFAMILY, answered by CTRL_CMD_NEWFAMILY (1) each
        #expect(!messages.isEmpty)
        #expect(messages.allSatisfy { $0.command == 1 })
        let names = messages.compactMap { $0.attributes.string(2) }  // CTRL_ATTR_FAMILY_NAME
        #expect(names.contains("nlctrl"))
        #expect(names.count == messages.count)
        #expect(try connection.readEvents() == false, "no event is pending, and reading them does not block")
    }

    @Test func anAbsentFamilyIsNilNotAnError() throws {
        #expect(try Nl80211Connection.open(family: "meterwise-absent", groups: []) == nil)
    }
}
