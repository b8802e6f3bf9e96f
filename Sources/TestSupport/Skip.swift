import Foundation
import Lab
import Testing

/// What a test needs from the machine, as Swift Testing traits: a test that cannot run here is reported
/// as *skipped* with the reason, never as passed. `.ci/test` fails when, as root, any test was skipped.
public enum TestNeeds {
    /// Why network-namespace (kernel) tests cannot run here, or nil when they can.
    public static let kernelUnavailable: String? = Netns.unavailableReason()
    /// Why tests against a real nginx cannot run here, or nil when they can.
    public static let nginxUnavailable: String? = Nginx.unavailableReason
    /// Why tests against a real NetworkManager cannot run here, or nil when they can.
    public static let networkManagerUnavailable: String? = NetworkManagerLab.unavailableReason
    /// Why tests that act as another local user (root running `runuser -u nobody`) cannot run here.
    public static let otherUserUnavailable: String? = {
        guard geteuid() == 0 else { return "needs root to act as user nobody with runuser (CI runs as root)" }
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser") else {
            return "no /usr/sbin/runuser (util-linux)"
        }
        guard getpwnam("nobody") != nil, getgrnam("nogroup") != nil else { return "no user nobody or group nogroup" }
        return nil
    }()
    /// Why tests that mount a small tmpfs (root) cannot run here.
    public static let rootUnavailable: String? =
        geteuid() == 0 ? nil : "needs root to mount a small tmpfs (CI runs as root)"
    /// Why TLS tests (a CA made with openssl) cannot run here, or nil when they can.
    public static let opensslUnavailable: String? = TestPKI.unavailableReason
    /// Why tests through a real proxy cannot run here, or nil when they can.
    public static let proxyUnavailable: String? = Tinyproxy.unavailableReason
    /// Why tests through squid cannot run here, or nil when they can.
    public static let squidUnavailable: String? = Squid.unavailableReason
    /// Why tests against lighttpd cannot run here, or nil when they can.
    public static let lighttpdUnavailable: String? = Lighttpd.unavailableReason
    /// Why tests against Apache httpd cannot run here, or nil when they can.
    public static let apacheUnavailable: String? = Apache.unavailableReason
    /// Why python3-dbusmock's UPower and power-profiles-daemon cannot run here.
    public static let powerMockUnavailable: String? = PowerMock.unavailableReason
    /// zsyncmake (Debian's zsync), or nil when it is not installed.
    public static let zsyncmake: String? = ["/usr/bin/zsyncmake", "/usr/local/bin/zsyncmake"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }
    /// Why delta tests against control files made by zsyncmake cannot run here, or nil when they can.
    public static let zsyncUnavailable: String? =
        zsyncmake == nil ? "zsyncmake is not installed (apt-get install zsync; CI installs it)" : nil
    /// Why tests of the built binary cannot run here, or nil when they can.
    public static let binaryUnavailable: String? =
        FileManager.default.isExecutableFile(atPath: RepoPaths.binary)
        ? nil : "\(RepoPaths.binary) is not built: run `swift build` before `swift test`"
}

extension Trait where Self == ConditionTrait {
    /// Needs Debian's zsync (zsyncmake makes the control files of the delta tests).
    public static var needsZsync: Self {
        .enabled(if: TestNeeds.zsyncUnavailable == nil, Comment(rawValue: "zsync: \(TestNeeds.zsyncUnavailable ?? "")"))
    }

    /// Needs root and network namespaces (the kernel lab).
    public static var needsKernel: Self {
        .enabled(
            if: TestNeeds.kernelUnavailable == nil, Comment(rawValue: "kernel: \(TestNeeds.kernelUnavailable ?? "")"))
    }

    /// Needs Debian's nginx (`apt-get install nginx-light`).
    public static var needsNginx: Self {
        .enabled(if: TestNeeds.nginxUnavailable == nil, Comment(rawValue: "nginx: \(TestNeeds.nginxUnavailable ?? "")"))
    }

    /// Needs root, network namespaces and a NetworkManager to run privately (network-manager, dnsmasq-base,
    /// udev).
    public static var needsNetworkManager: Self {
        .enabled(
            if: TestNeeds.networkManagerUnavailable == nil,
            Comment(rawValue: "networkmanager: \(TestNeeds.networkManagerUnavailable ?? "")"))
    }

    /// Needs root, `runuser` and the user `nobody`: the other local user of the security tests.
    public static var needsOtherUser: Self {
        .enabled(
            if: TestNeeds.otherUserUnavailable == nil,
            Comment(rawValue: "other user: \(TestNeeds.otherUserUnavailable ?? "")"))
    }

    /// Needs root (a tmpfs mount for disk-full tests).
    public static var needsRoot: Self {
        .enabled(if: TestNeeds.rootUnavailable == nil, Comment(rawValue: "root: \(TestNeeds.rootUnavailable ?? "")"))
    }

    /// Needs openssl, to make a CA for the TLS tests.
    public static var needsOpenSSL: Self {
        .enabled(
            if: TestNeeds.opensslUnavailable == nil, Comment(rawValue: "openssl: \(TestNeeds.opensslUnavailable ?? "")")
        )
    }

    /// Needs tinyproxy, a real HTTP proxy.
    public static var needsProxy: Self {
        .enabled(if: TestNeeds.proxyUnavailable == nil, Comment(rawValue: "proxy: \(TestNeeds.proxyUnavailable ?? "")"))
    }

    /// Needs squid, Debian's caching proxy, with its stock access rules.
    public static var needsSquid: Self {
        .enabled(if: TestNeeds.squidUnavailable == nil, Comment(rawValue: "squid: \(TestNeeds.squidUnavailable ?? "")"))
    }

    /// Needs python3-dbusmock (UPower, power-profiles-daemon on a private bus).
    public static var needsPowerMock: Self {
        .enabled(
            if: TestNeeds.powerMockUnavailable == nil,
            Comment(rawValue: "dbusmock: \(TestNeeds.powerMockUnavailable ?? "")"))
    }

    /// Needs lighttpd.
    public static var needsLighttpd: Self {
        .enabled(
            if: TestNeeds.lighttpdUnavailable == nil,
            Comment(rawValue: "lighttpd: \(TestNeeds.lighttpdUnavailable ?? "")"))
    }

    /// Needs Apache httpd (`apache2`).
    public static var needsApache: Self {
        .enabled(
            if: TestNeeds.apacheUnavailable == nil, Comment(rawValue: "apache2: \(TestNeeds.apacheUnavailable ?? "")"))
    }

    /// Needs the built `meterwise` binary.
    public static var needsBinary: Self {
        .enabled(
            if: TestNeeds.binaryUnavailable == nil, Comment(rawValue: "binary: \(TestNeeds.binaryUnavailable ?? "")"))
    }
}
