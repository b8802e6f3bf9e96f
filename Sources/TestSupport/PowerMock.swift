import Foundation

/// UPower and power-profiles-daemon as python3-dbusmock plays them, on a private bus of their own (a
/// dbus-daemon whose policy lets anyone own any name: the stock system policy forbids owning UPower's).
/// Set `DBUS_SYSTEM_BUS_ADDRESS` to `address` to make it the system bus of the code under test. `stop()`
/// ends every process and removes the folder.
public final class PowerMock: @unchecked Sendable {
    public let directory: String
    /// `unix:path=…`.
    public let address: String
    private var bus: Process?
    private var services: [String: Process] = [:]

    /// Why the mock cannot run here, or nil when it can.
    public static var unavailableReason: String? {
        let needed = [
            ("/usr/bin/dbus-daemon", "dbus"), ("/usr/bin/busctl", "systemd"), ("/usr/bin/python3", "python3"),
            ("/usr/lib/python3/dist-packages/dbusmock/templates/upower.py", "python3-dbusmock"),
        ]
        let missing = needed.filter { !FileManager.default.fileExists(atPath: $0.0) }
        guard missing.isEmpty else {
            return
                "needs \(missing.map(\.0).joined(separator: ", ")) (apt-get install \(Set(missing.map(\.1)).sorted().joined(separator: " ")))"
        }
        return nil
    }

    public init() throws {
        directory = NSTemporaryDirectory() + "mw-power-\(getpid())-\(UInt32.random(in: 0...0xFFFFFF))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        address = "unix:path=\(directory)/bus"
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>system</type>
              <listen>\(address)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow user="*"/>
                <allow own="*"/>
                <allow send_destination="*"/>
                <allow receive_sender="*"/>
                <allow send_type="method_call"/>
                <allow send_type="signal"/>
              </policy>
            </busconfig>
            """
        try config.write(toFile: directory + "/bus.conf", atomically: true, encoding: .utf8)
        let bus = try Self.launch(["/usr/bin/dbus-daemon", "--config-file=\(directory)/bus.conf", "--nofork"])
        self.bus = bus
        for _ in 0..<200 where !FileManager.default.fileExists(atPath: directory + "/bus") { usleep(20_000) }
        guard FileManager.default.fileExists(atPath: directory + "/bus") else {
            stop()
            throw NginxError(message: "the private bus did not start")
        }
    }

    /// Starts a dbusmock template (`upower`, `power_profiles_daemon`) with its parameters (JSON), and waits
    /// until it owns `name`.
    public func start(template: String, name: String, parameters: String = "{}") throws {
        let process = try Self.launch(
            ["/usr/bin/python3", "-m", "dbusmock", "--system", "--template", template, "--parameters", parameters],
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": address])
        services[template] = process
        for _ in 0..<250 {
            if (try? busctl(["status", name]))?.isEmpty == false { return }
            usleep(20_000)
        }
        throw NginxError(message: "dbusmock's \(template) did not take \(name)")
    }

    /// Ends the template's process (the service vanishes from the bus).
    public func kill(template: String) {
        guard let process = services.removeValue(forKey: template) else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Runs `busctl --address=… ARGS` and returns its output.
    @discardableResult
    public func busctl(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/busctl")
        process.arguments = ["--address=\(address)"] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw NginxError(message: "busctl \(arguments.joined(separator: " ")) failed")
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// UPower's `OnBattery`.
    public func setOnBattery(_ on: Bool) throws {
        try busctl([
            "set-property", "org.freedesktop.UPower", "/org/freedesktop/UPower", "org.freedesktop.UPower",
            "OnBattery", "b", on ? "true" : "false",
        ])
    }

    /// The display device: a present battery at `percent`, discharging (2) or charging (1).
    public func setBattery(percent: Double, discharging: Bool) throws {
        try busctl([
            "call", "org.freedesktop.UPower", "/org/freedesktop/UPower", "org.freedesktop.DBus.Mock",
            "SetupDisplayDevice", "uuddddxxbsu", "2", discharging ? "2" : "1", "\(percent)", "40", "60", "10", "3600",
            "0", "true", "battery", "1",
        ])
    }

    /// power-profiles-daemon's `ActiveProfile`.
    public func setProfile(_ profile: String) throws {
        try busctl([
            "set-property", "net.hadess.PowerProfiles", "/net/hadess/PowerProfiles", "net.hadess.PowerProfiles",
            "ActiveProfile", "s", profile,
        ])
    }

    public func stop() {
        for template in Array(services.keys) { kill(template: template) }
        if let bus {
            Foundation.kill(bus.processIdentifier, SIGKILL)
            bus.waitUntilExit()
        }
        bus = nil
        try? FileManager.default.removeItem(atPath: directory)
    }

    static func launch(_ argv: [String], environment: [String: String] = [:]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: argv[0])
        process.arguments = Array(argv.dropFirst())
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }
}
