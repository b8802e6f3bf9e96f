import CSystemdBus

#if canImport(Glibc)
import Glibc
#endif

/// A value read from a D-Bus property (the few types NetworkManager's properties use here).
enum BusValue: Equatable {
    case uint32(UInt32)
    case string(String)
    case bool(Bool)
    case bytes([UInt8])
    case strings([String])
    case double(Double)
    /// An `a{sv}` whose string values are kept (others skipped): NetworkManager's DHCP options.
    case dictionary([String: String])

    var uint32: UInt32? { if case .uint32(let v) = self { v } else { nil } }
    var string: String? { if case .string(let v) = self { v } else { nil } }
    var bytes: [UInt8]? { if case .bytes(let v) = self { v } else { nil } }
    var strings: [String]? { if case .strings(let v) = self { v } else { nil } }
    var double: Double? { if case .double(let v) = self { v } else { nil } }
    var bool: Bool? { if case .bool(let v) = self { v } else { nil } }
    var dictionary: [String: String]? { if case .dictionary(let v) = self { v } else { nil } }
}

/// An error of the bus: what failed and the errno-style code sd-bus returned.
struct BusError: Error, CustomStringConvertible {
    var what: String
    var code: Int32
    var description: String { "\(what): \(String(cString: strerror(-code)))" }
}

/// One property value a `PropertiesChanged` signal carried.
struct PropertyChange: Sendable, Equatable {
    var path: String
    var key: String
    var value: UInt32
}

/// A connection to the system bus through sd-bus (`$DBUS_SYSTEM_BUS_ADDRESS` honoured). Not thread-safe,
/// like sd-bus itself: one thread owns it (`NetworkManagerHints`' loop).
final class SystemBus {
    let bus: OpaquePointer
    /// Set by signal callbacks; the owner reads and clears it. `values` collects the values of `quickKeys`
    /// that `PropertiesChanged` signals carried, by object path, so the owner can act before any round trip.
    final class Flag {
        var raised = false
        var values: [PropertyChange] = []
    }

    /// The `u` properties whose changes the signal itself carries to `BusHintReader.quickUpdate`:
    /// NetworkManager's `Metered` and connectivity states.
    static let quickKeys: Set<String> = ["Metered", "Connectivity", "Ip4Connectivity", "Ip6Connectivity"]
    let changed = Flag()
    /// Run after each method call's reply, on the loop's thread: `HintLoop` takes the quick changes that
    /// arrived meanwhile, so a full read of a busy service never holds them back.
    var afterCall: (() -> Void)?

    init() throws(BusError) {
        var bus: OpaquePointer?
        let r = sd_bus_open_system(&bus)
        guard r >= 0, let bus else { throw BusError(what: "cannot connect to the system bus", code: r) }
        self.bus = bus
    }

    deinit { sd_bus_flush_close_unref(bus) }

    /// Raises `changed` for every signal matching `rule` (a D-Bus match rule).
    func watch(_ rule: String) throws(BusError) {
        let handler: sd_bus_message_handler_t = { _, userdata, _ in
            if let userdata { Unmanaged<Flag>.fromOpaque(userdata).takeUnretainedValue().raised = true }
            return 0
        }
        try addMatch(rule, handler)
    }

    /// Registers `handler` for `rule` with `changed` as its userdata. The slot is floating (nil): the match
    /// lives as long as the connection.
    private func addMatch(_ rule: String, _ handler: sd_bus_message_handler_t) throws(BusError) {
        let r = sd_bus_add_match(bus, nil, rule, handler, Unmanaged.passUnretained(changed).toOpaque())
        guard r >= 0 else { throw BusError(what: "cannot add the match \(rule)", code: r) }
    }

    /// Raises `changed` for every `PropertiesChanged` signal matching `rule`, and records the `quickKeys`
    /// values one carries (with the object's path) in `changed.values`.
    func watchQuick(_ rule: String) throws(BusError) {
        let handler: sd_bus_message_handler_t = { message, userdata, _ in
            guard let userdata, let message else { return 0 }
            let flag = Unmanaged<Flag>.fromOpaque(userdata).takeUnretainedValue()
            flag.raised = true
            if let path = sd_bus_message_get_path(message) {
                let path = String(cString: path)
                for (key, value) in SystemBus.quickValues(in: message) {
                    flag.values.append(PropertyChange(path: path, key: key, value: value))
                }
            }
            return 0
        }
        try addMatch(rule, handler)
    }

    /// The `quickKeys` entries of a `PropertiesChanged(s interface, a{sv} changed, as invalidated)` signal.
    static func quickValues(in message: OpaquePointer) -> [(String, UInt32)] {
        var interface: UnsafePointer<CChar>?
        guard sd_bus_message_read_basic(message, type("s"), &interface) > 0,
            sd_bus_message_enter_container(message, type("a"), "{sv}") > 0
        else { return [] }
        var found: [(String, UInt32)] = []
        for _ in 0..<256 {
            guard sd_bus_message_enter_container(message, type("e"), "sv") > 0 else { break }
            var key: UnsafePointer<CChar>?
            if sd_bus_message_read_basic(message, type("s"), &key) > 0, let key,
                case let name = String(cString: key), quickKeys.contains(name),
                let value = try? readVariant(message, what: name).uint32
            {
                found.append((name, value))
            } else {
                _ = sd_bus_message_skip(message, "v")
            }
            _ = sd_bus_message_exit_container(message)
        }
        return found
    }

    /// Handles every message already received; returns false once nothing is left to do.
    func processPending() throws(BusError) {
        while true {
            let r = sd_bus_process(bus, nil)
            guard r >= 0 else { throw BusError(what: "the system bus connection failed", code: r) }
            if r == 0 { return }
        }
    }

    /// The descriptor and poll events to wait on, and sd-bus's own timeout in milliseconds (-1: none).
    func pollRequest() -> (fd: Int32, events: Int16, timeoutMilliseconds: Int32) {
        let fd = sd_bus_get_fd(bus)
        let events = Int16(truncatingIfNeeded: max(0, sd_bus_get_events(bus)))
        var usec: UInt64 = 0
        var timeout: Int32 = -1
        if sd_bus_get_timeout(bus, &usec) > 0, usec != UInt64.max {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let nowUsec = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
            timeout = usec <= nowUsec ? 0 : Int32(min((usec - nowUsec + 999) / 1000, 60_000))
        }
        return (fd, events, timeout)
    }

    /// Calls `method` with string arguments and returns the reply, or throws the D-Bus error.
    func call(
        _ destination: String, _ path: String, _ interface: String, _ method: String, _ arguments: [String],
        timeout: UInt64 = 2_000_000
    ) throws(BusError) -> OpaquePointer {
        var message: OpaquePointer?
        var r = sd_bus_message_new_method_call(bus, &message, destination, path, interface, method)
        guard r >= 0, let message else { throw BusError(what: "cannot build \(interface).\(method)", code: r) }
        defer { sd_bus_message_unref(message) }
        for argument in arguments {
            r = argument.withCString { sd_bus_message_append_basic(message, Self.type("s"), $0) }
            guard r >= 0 else { throw BusError(what: "cannot build \(interface).\(method)", code: r) }
        }
        var error = mw_bus_error_null()
        defer { sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        r = sd_bus_call(bus, message, timeout, &error, &reply)
        guard r >= 0, let reply else {
            let name = error.name.map { String(cString: $0) } ?? ""
            throw BusError(what: "\(destination) \(path) \(interface).\(method) failed \(name)", code: r)
        }
        if let hook = afterCall {
            afterCall = nil
            hook()
            afterCall = hook
        }
        return reply
    }

    /// `org.freedesktop.DBus.NameHasOwner(name)`.
    func nameHasOwner(_ name: String) throws(BusError) -> Bool {
        let reply = try call(
            "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner", [name])
        defer { sd_bus_message_unref(reply) }
        var value: Int32 = 0
        let r = sd_bus_message_read_basic(reply, Self.type("b"), &value)
        guard r > 0 else { throw BusError(what: "NameHasOwner gave no boolean", code: r < 0 ? r : -EBADMSG) }
        return value != 0
    }

    /// `org.freedesktop.DBus.Properties.Get(interface, name)` on `path` of `destination`.
    func property(_ destination: String, _ path: String, _ interface: String, _ name: String) throws(BusError)
        -> BusValue
    {
        let reply = try call(destination, path, "org.freedesktop.DBus.Properties", "Get", [interface, name])
        defer { sd_bus_message_unref(reply) }
        return try Self.readVariant(reply, what: "\(interface).\(name)")
    }

    /// The object paths `org.freedesktop.DBus.ObjectManager.GetManagedObjects` on `path` lists (their
    /// interfaces and properties are skipped).
    func managedObjects(_ destination: String, _ path: String) throws(BusError) -> [String] {
        let reply = try call(destination, path, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects", [])
        defer { sd_bus_message_unref(reply) }
        var r = sd_bus_message_enter_container(reply, Self.type("a"), "{oa{sa{sv}}}")
        guard r > 0 else { throw BusError(what: "GetManagedObjects gave no object list", code: r < 0 ? r : -EBADMSG) }
        var paths: [String] = []
        while paths.count < 4096 {
            r = sd_bus_message_enter_container(reply, Self.type("e"), "oa{sa{sv}}")
            if r <= 0 { break }
            var value: UnsafePointer<CChar>?
            r = sd_bus_message_read_basic(reply, Self.type("o"), &value)
            if r > 0, let value { paths.append(String(cString: value)) }
            _ = sd_bus_message_skip(reply, "a{sa{sv}}")
            _ = sd_bus_message_exit_container(reply)
        }
        guard r >= 0 else { throw BusError(what: "cannot read GetManagedObjects", code: r) }
        return paths
    }

    /// Reads the variant at the message's cursor as a `BusValue`.
    static func readVariant(_ message: OpaquePointer, what: String) throws(BusError) -> BusValue {
        var type: CChar = 0
        var contents: UnsafePointer<CChar>?
        var r = sd_bus_message_peek_type(message, &type, &contents)
        guard r > 0, type == Self.type("v"), let contents else {
            throw BusError(what: "\(what) is not a variant", code: r < 0 ? r : -EBADMSG)
        }
        let signature = String(cString: contents)
        r = sd_bus_message_enter_container(message, Self.type("v"), contents)
        guard r > 0 else { throw BusError(what: "cannot read \(what)", code: r < 0 ? r : -EBADMSG) }
        defer { sd_bus_message_exit_container(message) }
        switch signature {
        case "u":
            var value: UInt32 = 0
            r = sd_bus_message_read_basic(message, Self.type("u"), &value)
            guard r > 0 else { break }
            return .uint32(value)
        case "d":
            var value: Double = 0
            r = sd_bus_message_read_basic(message, Self.type("d"), &value)
            guard r > 0 else { break }
            return .double(value)
        case "b":
            var value: Int32 = 0
            r = sd_bus_message_read_basic(message, Self.type("b"), &value)
            guard r > 0 else { break }
            return .bool(value != 0)
        case "s", "o":
            var value: UnsafePointer<CChar>?
            r = sd_bus_message_read_basic(message, signature.utf8.first.map { CChar(bitPattern: $0) } ?? 0, &value)
            guard r > 0, let value else { break }
            return .string(String(cString: value))
        case "ay":
            var pointer: UnsafeRawPointer?
            var size = 0
            r = sd_bus_message_read_array(message, Self.type("y"), &pointer, &size)
            guard r >= 0 else { break }
            guard let pointer, size > 0 else { return .bytes([]) }
            return .bytes(Array(UnsafeRawBufferPointer(start: pointer, count: size)))
        case "ao", "as":
            let element = String(signature.dropFirst())
            r = sd_bus_message_enter_container(message, Self.type("a"), element)
            guard r > 0 else { break }
            defer { sd_bus_message_exit_container(message) }
            var values: [String] = []
            while true {
                var value: UnsafePointer<CChar>?
                r = sd_bus_message_read_basic(message, element.utf8.first.map { CChar(bitPattern: $0) } ?? 0, &value)
                if r <= 0 { break }
                if let value { values.append(String(cString: value)) }
            }
            guard r >= 0 else { break }
            return .strings(values)
        case "a{sv}":
            r = sd_bus_message_enter_container(message, Self.type("a"), "{sv}")
            guard r > 0 else { break }
            defer { sd_bus_message_exit_container(message) }
            var values: [String: String] = [:]
            // At most 1024 entries of a peer's dictionary are read.
            for _ in 0..<1024 {
                r = sd_bus_message_enter_container(message, Self.type("e"), "sv")
                if r <= 0 { break }
                var key: UnsafePointer<CChar>?
                r = sd_bus_message_read_basic(message, Self.type("s"), &key)
                if r > 0, let key, let value = readStringVariant(message) {
                    values[String(cString: key)] = value
                } else {
                    _ = sd_bus_message_skip(message, "v")
                }
                _ = sd_bus_message_exit_container(message)
            }
            guard r >= 0 else { break }
            return .dictionary(values)
        default:
            throw BusError(what: "\(what) has the unexpected type \(signature)", code: -EBADMSG)
        }
        throw BusError(what: "cannot read \(what)", code: r < 0 ? r : -EBADMSG)
    }

    /// The string in the variant at the cursor, read past; nil (the cursor left where it was) when the variant
    /// holds another type.
    static func readStringVariant(_ message: OpaquePointer) -> String? {
        var type: CChar = 0
        var contents: UnsafePointer<CChar>?
        guard sd_bus_message_peek_type(message, &type, &contents) > 0, type == Self.type("v"), let contents,
            String(cString: contents) == "s", sd_bus_message_enter_container(message, Self.type("v"), "s") > 0
        else { return nil }
        defer { sd_bus_message_exit_container(message) }
        var value: UnsafePointer<CChar>?
        guard sd_bus_message_read_basic(message, Self.type("s"), &value) > 0, let value else { return nil }
        return String(cString: value)
    }

    static func type(_ character: Unicode.Scalar) -> CChar { CChar(bitPattern: UInt8(character.value)) }
}
