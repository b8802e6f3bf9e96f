import Links
import Testing

@Suite struct ClassifierTests {
    static let table: [(LinkFacts, LinkKind, String)] = [
        (LinkFacts(name: "lo", arphrd: 772), .loopback, "arphrd=loopback"),
        (LinkFacts(name: "wlp2s0", devtype: "wlan", arphrd: 1, driver: "iwlwifi"), .wlan, "devtype=wlan"),
        (LinkFacts(name: "wwan0", devtype: "wwan", arphrd: 519, driver: "qmi_wwan"), .wwan, "devtype=wwan"),
        (LinkFacts(name: "bnep0", devtype: "bluetooth", arphrd: 1), .bluetooth, "devtype=bluetooth"),
        (LinkFacts(name: "usb0", devtype: "gadget", arphrd: 1), .usbTether, "devtype=gadget"),
        (LinkFacts(name: "mystery0", hasWirelessDirectory: true, arphrd: 1), .wlan, "sysfs=wireless"),
        (LinkFacts(name: "ppp0", arphrd: 512, rtnlType: "ppp"), .ppp, "arphrd=ppp"),
        (LinkFacts(name: "rmnet_data0", arphrd: 519), .wwan, "arphrd=rawip"),
        (LinkFacts(name: "modem0", arphrd: 0xFFFE), .wwan, "arphrd=none"),
        (LinkFacts(name: "tun0", arphrd: 0xFFFE, rtnlType: "tun"), .tun, "type=tun"),
        (LinkFacts(name: "usb0", arphrd: 1, driver: "rndis_host"), .usbTether, "driver=rndis_host"),
        (LinkFacts(name: "enx001122", arphrd: 1, driver: "cdc_ether"), .usbTether, "driver=cdc_ether"),
        (LinkFacts(name: "eth1", arphrd: 1, driver: "ipheth"), .usbTether, "driver=ipheth"),
        (LinkFacts(name: "usb1", arphrd: 1, driver: "cdc_ncm"), .usbTether, "driver=cdc_ncm"),
        (LinkFacts(name: "veth12ab", arphrd: 1, rtnlType: "veth"), .veth, "type=veth"),
        (LinkFacts(name: "wlan0", arphrd: 1, rtnlType: "veth"), .wlan, "name=wlan0 (over type=veth)"),
        (LinkFacts(name: "wwan0", arphrd: 1, rtnlType: "veth"), .wwan, "name=wwan0 (over type=veth)"),
        (LinkFacts(name: "docker0", arphrd: 1, rtnlType: "bridge"), .bridge, "type=bridge"),
        (LinkFacts(name: "wg0", arphrd: 0xFFFE, rtnlType: "wireguard"), .tun, "type=wireguard"),
        (LinkFacts(name: "eth0", arphrd: 1, driver: "virtio_net"), .ethernet, "name=eth0"),
        (LinkFacts(name: "enp3s0", arphrd: 1, driver: "r8169"), .ethernet, "name=enp3s0"),
        (LinkFacts(name: "wlx00c0ca", arphrd: 1), .wlan, "name=wlx00c0ca"),
        (LinkFacts(name: "wwp0s20u4", arphrd: 1), .wwan, "name=wwp0s20u4"),
        (LinkFacts(name: "rmnet0", arphrd: 1), .wwan, "name=rmnet0"),
        (LinkFacts(name: "weird", arphrd: 1, driver: "e1000e"), .ethernet, "arphrd=ether, driver=e1000e"),
        (LinkFacts(name: "weird", arphrd: 1), .other, "no matching fact"),
        // DEVTYPE beats a misleading name; the wireless dir beats a tethering driver.
        (LinkFacts(name: "eth0", devtype: "wlan", arphrd: 1), .wlan, "devtype=wlan"),
        (LinkFacts(name: "usb0", hasWirelessDirectory: true, arphrd: 1, driver: "rndis_host"), .wlan, "sysfs=wireless"),
    ]

    @Test(arguments: table)
    func classifies(facts: LinkFacts, kind: LinkKind, source: String) {
        let result = LinkClassifier.classify(facts)
        #expect(result.kind == kind)
        #expect(result.source == source)
    }
}
