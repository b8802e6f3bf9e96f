import Foundation
import Lab
import Subprocess

/// A real NetworkManager for tests, isolated from the machine's: a private system bus (`dbus-daemon` on a
/// socket in a temporary folder), a device namespace where `systemd-udevd` and NetworkManager run with
/// their own `/run` state, and an access-point namespace across a veth `wlan0` ⇄ `ap0` where `dnsmasq`
/// hands out addresses with DHCP option 43 `ANDROID_METERED`, as an Android hotspot does. NetworkManager
/// then says the link is metered (guess-yes), with no radio in sight. `teardown()` ends every process
/// and removes the namespaces and the folder.
public final class NetworkManagerLab: @unchecked Sendable {
    /// The namespace NetworkManager, and the code under test, run in.
    public let device: Netns
    /// The hotspot's side: `ap0` at `gateway`, dnsmasq, and whatever server a test starts there.
    public let accessPoint: Netns
    public let directory: String
    /// `unix:path=...`: set it as `DBUS_SYSTEM_BUS_ADDRESS` to talk to this lab's NetworkManager.
    public let busAddress: String
    public let gateway = "10.88.0.1"
    /// The NetworkManager connection profile on wlan0.
    public let profile = "mwhotspot"
    /// dbus-daemon, dnsmasq and NetworkManager (with udevd beside it in the device namespace).
    private var pids: [Int32] = []

    /// Why a real NetworkManager cannot run here, or nil when it can.
    public static var unavailableReason: String? {
        if let kernel = Netns.unavailableReason() { return kernel }
        let needed = [
            ("/usr/sbin/NetworkManager", "network-manager"), ("/usr/bin/nmcli", "network-manager"),
            ("/usr/sbin/dnsmasq", "dnsmasq-base"), ("/usr/bin/dbus-daemon", "dbus"),
            ("/lib/systemd/systemd-udevd", "udev"), ("/usr/bin/udevadm", "udev"),
        ]
        let missing = needed.filter { !FileManager.default.isExecutableFile(atPath: $0.0) }
        guard missing.isEmpty else {
            let packages = Set(missing.map(\.1)).sorted().joined(separator: " ")
            return
                "a private NetworkManager needs \(missing.map(\.0).joined(separator: ", ")) (apt-get install \(packages))"
        }
        return nil
    }

    /// The port of the connectivity check's server on the access point (`start(connectivityCheck: true)`).
    public static let checkPort = 8081
    /// Whether NetworkManager's connectivity check runs against the access point's check server.
    private var connectivityCheck = false

    /// Builds the lab and brings wlan0 up under NetworkManager with DHCP from the hotspot. With
    /// `connectivityCheck`, NetworkManager checks `http://GATEWAY:8081/check` for `OK` (forced with
    /// `checkConnectivity()`), and `setPortal(_:)` makes that server a captive portal.
    public static func start(connectivityCheck: Bool = false) async throws -> NetworkManagerLab {
        let lab = try NetworkManagerLab()
        lab.connectivityCheck = connectivityCheck
        do {
            try await lab.start()
        } catch {
            lab.teardown()
            throw error
        }
        return lab
    }

    private init() throws {
        directory = NSTemporaryDirectory() + "mwnm-\(getpid())-\(UInt32.random(in: 0...0xFFFFFF))"
        try FileManager.default.createDirectory(atPath: directory + "/connections", withIntermediateDirectories: true)
        busAddress = "unix:path=\(directory)/bus"
        device = try Netns.create(prefix: "mwnm-dev")
        do {
            accessPoint = try Netns.create(prefix: "mwnm-ap")
        } catch {
            device.delete()
            throw error
        }
    }

    private func start() async throws {
        try Command.run([
            "ip", "link", "add", "wlan0", "netns", device.name, "type", "veth", "peer", "name", "ap0",
            "netns", accessPoint.name,
        ])
        try accessPoint.ip("addr", "add", "\(gateway)/24", "dev", "ap0")
        try accessPoint.ip("link", "set", "ap0", "up")
        try await startBus()
        try await spawn(
            [
                "ip", "netns", "exec", accessPoint.name,
                "dnsmasq", "--keep-in-foreground", "--interface=ap0", "--bind-interfaces", "--except-interface=lo",
                "--port=0", "--dhcp-range=10.88.0.50,10.88.0.99,1h", "--dhcp-option-force=43,ANDROID_METERED",
                "--dhcp-option=3,\(gateway)", "--no-resolv", "--no-hosts", "--pid-file=\(directory)/dnsmasq.pid",
                "--dhcp-leasefile=\(directory)/dnsmasq.leases",
            ], log: "dnsmasq.log")
        if connectivityCheck { try await startCheckServer() }
        try await startNetworkManager()
        try nmcli(["device", "set", "wlan0", "managed", "yes"])
        try nmcli([
            "connection", "add", "type", "ethernet", "ifname", "wlan0", "con-name", profile,
            "ipv4.method", "auto", "ipv6.method", "ignore", "connection.autoconnect", "no",
        ])
        try nmcli(["--wait", "20", "connection", "up", profile])
    }

    /// A system bus of our own: the system bus configuration with its own socket and no pid file.
    private func startBus() async throws {
        let system = try String(contentsOfFile: "/usr/share/dbus-1/system.conf", encoding: .utf8)
        var config = system.replacingOccurrences(
            of: #"<listen>[^<]*</listen>"#, with: "<listen>\(busAddress)</listen>", options: .regularExpression)
        config = config.replacingOccurrences(of: #"<pidfile>[^<]*</pidfile>"#, with: "", options: .regularExpression)
        config = config.replacingOccurrences(
            of: "<includedir>system.d</includedir>", with: "<includedir>/usr/share/dbus-1/system.d</includedir>")
        try config.write(toFile: directory + "/bus.conf", atomically: true, encoding: .utf8)
        try await spawn(["dbus-daemon", "--config-file=\(directory)/bus.conf", "--nofork"], log: "bus.log")
        let deadline = ContinuousClock.now + .seconds(10)
        while !FileManager.default.fileExists(atPath: directory + "/bus"), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Starts a long-lived daemon in the background with stdout and stderr in `log` (in the lab's folder)
    /// and returns its pid. Started through `sh -c '(exec ...) &'` by swift-subprocess, which closes every
    /// descriptor the child would inherit: a daemon left holding one of Foundation's Process descriptors
    /// would make Foundation believe that Process never ends.
    @discardableResult
    private func spawn(_ argv: [String], log: String, environment: [String: String] = [:]) async throws -> Int32 {
        let quoted = argv.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let assignments = environment.map { "\($0.key)='\($0.value)'" }.joined(separator: " ")
        let line = "\(assignments) exec \(quoted) </dev/null >'\(directory)/\(log)' 2>&1"
        let result = try await Subprocess.run(
            .name("sh"), arguments: ["-c", "(\(line)) & echo $!"], output: .string(limit: 4096), error: .discarded)
        // swift-subprocess 1.0.0 gives `String?` here, later 1.0.x `String` (Package.swift allows both).
        let collected: String? = result.standardOutput
        let output = collected ?? ""
        guard let pid = Int32(output.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw LabError(.childFailed, "cannot start \(argv.first ?? "?"): \(output)")
        }
        pids.append(pid)
        return pid
    }

    /// udevd and NetworkManager in the device namespace, each with a private tmpfs over the state it keeps
    /// in /run and /var/lib, so the machine's own (if any) is never touched.
    private func startNetworkManager() async throws {
        var config = """
            [main]
            plugins=keyfile
            no-auto-default=*
            dhcp=internal
            dns=none
            [keyfile]
            path=\(directory)/connections
            [logging]
            level=WARN

            """
        if connectivityCheck {
            config += """
                [connectivity]
                enabled=true
                uri=http://\(gateway):\(Self.checkPort)/check
                response=OK
                interval=600

                """
        }
        try config.write(toFile: directory + "/nm.conf", atomically: true, encoding: .utf8)
        let script = """
            set -e
            mkdir -p /run/udev /run/NetworkManager /var/lib/NetworkManager
            mount -t tmpfs none /run/udev
            mount -t tmpfs none /run/NetworkManager
            mount -t tmpfs none /var/lib/NetworkManager
            /lib/systemd/systemd-udevd --daemon
            udevadm trigger --subsystem-match=net --action=add
            udevadm settle -t 10 || true
            exec NetworkManager --no-daemon --config=\(directory)/nm.conf
            """
        let pid = try await spawn(
            ["ip", "netns", "exec", device.name, "sh", "-c", script], log: "nm.log",
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": busAddress])
        let log = directory + "/nm.log"
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if (try? nmcli(["-t", "-f", "RUNNING", "general"]))?.contains("running") == true { return }
            guard kill(pid, 0) == 0 else { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        throw LabError(.childFailed, "NetworkManager did not come up on the private bus: \(text.suffix(800))")
    }

    /// The connectivity check's server on the access point: `OK` to `/check`, or, while the file `portal` is in
    /// the lab's folder, a hotel's captive portal (302 to `/login`, a sign-in page).
    private func startCheckServer() async throws {
        let script = """
            import http.server, os, sys
            flag = sys.argv[1]
            class H(http.server.BaseHTTPRequestHandler):
                def do_GET(self):
                    if os.path.exists(flag) and self.path != "/login":
                        self.send_response(302)
                        self.send_header("Location", "http://\(gateway):\(Self.checkPort)/login")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    body = b"OK" if self.path == "/check" else b"<html><body>Sign in to HotelWiFi</body></html>"
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain" if self.path == "/check" else "text/html")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                def log_message(self, *args):
                    pass
            http.server.ThreadingHTTPServer(("\(gateway)", \(Self.checkPort)), H).serve_forever()
            """
        try script.write(toFile: directory + "/check.py", atomically: true, encoding: .utf8)
        try await spawn(
            [
                "ip", "netns", "exec", accessPoint.name, "/usr/bin/python3", directory + "/check.py",
                directory + "/portal",
            ],
            log: "check.log")
    }

    /// The port of the https front (`startTLSFront`).
    public static let tlsPort = 8443

    /// An https front on the access point at `GATEWAY:8443` for a plain server there on `backendPort`. With
    /// the portal off it presents `certificate` (e.g. TestPKI's `lab`, for 10.88.0.1) and relays each
    /// connection to the backend; while the portal is on (`setPortal(true)`) it presents
    /// `portalCertificate` (a portal's own, for its own name), answers every request with a redirect to the
    /// sign-in page, and cuts the connections it relayed, as a hotel's portal does when a session ends.
    /// Returns `https://GATEWAY:8443`.
    public func startTLSFront(
        certificate: String, key: String, portalCertificate: String, portalKey: String,
        backendPort: Int
    ) async throws -> String {
        let script = """
            import asyncio, os, ssl, sys
            flag, cert, key, pcert, pkey, host, port, backend, login = sys.argv[1:10]
            portal = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            portal.load_cert_chain(pcert, pkey)
            real = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            real.load_cert_chain(cert, key)
            def choose(sock, name, ctx):
                # Called for every ClientHello, with or without SNI: the certificate is chosen per connection.
                if os.path.exists(flag):
                    sock.context = portal
            real.sni_callback = choose
            relayed = set()
            async def pump(reader, writer):
                try:
                    while True:
                        data = await reader.read(65536)
                        if not data:
                            break
                        writer.write(data)
                        await writer.drain()
                except Exception:
                    pass
                writer.transport.abort()
            async def handle(reader, writer):
                if writer.get_extra_info("ssl_object").context is portal:
                    try:
                        await reader.read(65536)
                        writer.write(("HTTP/1.1 302 Found\\r\\nLocation: %s\\r\\nContent-Length: 0\\r\\n"
                                      "Connection: close\\r\\n\\r\\n" % login).encode())
                        await writer.drain()
                    except Exception:
                        pass
                    writer.transport.abort()
                    return
                try:
                    breader, bwriter = await asyncio.open_connection(host, int(backend))
                except Exception:
                    writer.transport.abort()
                    return
                relayed.add(writer)
                await asyncio.gather(pump(reader, bwriter), pump(breader, writer))
                relayed.discard(writer)
            async def watch():
                while True:
                    await asyncio.sleep(0.05)
                    if os.path.exists(flag):
                        for w in list(relayed):
                            w.transport.abort()
            async def main():
                server = await asyncio.start_server(handle, host, int(port), ssl=real)
                asyncio.ensure_future(watch())
                await server.serve_forever()
            asyncio.run(main())
            """
        try script.write(toFile: directory + "/front.py", atomically: true, encoding: .utf8)
        try await spawn(
            [
                "ip", "netns", "exec", accessPoint.name, "/usr/bin/python3", directory + "/front.py",
                directory + "/portal", certificate, key, portalCertificate, portalKey, gateway, "\(Self.tlsPort)",
                "\(backendPort)", "http://\(gateway):\(Self.checkPort)/login",
            ],
            log: "front.log")
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            let listening =
                (try? Command.run(
                    ["ip", "netns", "exec", accessPoint.name, "ss", "-Hltn", "sport = :\(Self.tlsPort)"],
                    allowFailure: true)) ?? ""
            if !listening.isEmpty { return "https://\(gateway):\(Self.tlsPort)" }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw LabError(
            .childFailed,
            "the https front did not listen: \((try? String(contentsOfFile: directory + "/front.log", encoding: .utf8)) ?? "")"
        )
    }

    /// Makes the access point's check server a captive portal, or the internet again.
    public func setPortal(_ on: Bool) throws {
        let path = directory + "/portal"
        if on {
            _ = FileManager.default.createFile(atPath: path, contents: Data())
        } else {
            try? FileManager.default.removeItem(atPath: path)
        }
    }

    /// Forces NetworkManager's connectivity check now and returns what it says (`full`, `portal`, ...).
    @discardableResult
    public func checkConnectivity() throws -> String {
        try nmcli(["networking", "connectivity", "check"]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Runs `nmcli ARGS` against this lab's NetworkManager.
    @discardableResult
    public func nmcli(_ arguments: [String]) throws -> String {
        try Command.run(["env", "DBUS_SYSTEM_BUS_ADDRESS=\(busAddress)", "nmcli"] + arguments)
    }

    /// Sets the profile's `connection.metered` (`yes`, `no`, `unknown`) and reapplies it: NetworkManager's
    /// Metered changes with no change in the kernel.
    public func setMetered(_ value: String) throws {
        try nmcli(["connection", "modify", profile, "connection.metered", value])
        try nmcli(["device", "reapply", "wlan0"])
    }

    /// `ip netns exec DEVICE env DBUS_SYSTEM_BUS_ADDRESS=... ARGV`: a program on the lab's device and bus.
    public func onDevice(_ argv: [String]) -> [String] {
        ["ip", "netns", "exec", device.name, "env", "DBUS_SYSTEM_BUS_ADDRESS=\(busAddress)"] + argv
    }

    /// Ends every process of the lab and removes the namespaces and the folder. Safe to call twice.
    public func teardown() {
        for namespace in [device, accessPoint] {
            let pids = (try? Command.run(["ip", "netns", "pids", namespace.name], allowFailure: true)) ?? ""
            for pid in pids.split(whereSeparator: \.isWhitespace).compactMap({ Int32($0) }) { kill(pid, SIGKILL) }
        }
        for pid in pids { kill(pid, SIGTERM) }
        pids = []
        device.delete()
        accessPoint.delete()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
