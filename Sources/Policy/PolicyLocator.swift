import Foundation

/// Where the policy comes from. Every command that uses a policy (`daemon`, `policy check`,
/// `policy explain`, `demo`, `lab`) asks `PolicyLocator.resolve`, so they cannot disagree.
public struct PolicySource: Sendable, Hashable, CustomStringConvertible {
    /// Why this policy was chosen.
    public enum Origin: String, Sendable, Hashable {
        /// `--policy PATH`.
        case explicit
        /// `$XDG_CONFIG_HOME/meterwise/policies.d` (default `~/.config/meterwise/policies.d`) of a user.
        case user
        /// `/etc/meterwise/policies.d`, the system's drop-in directory.
        case system
        /// The shipped `policies/default.yaml`, built into the binary.
        case builtIn = "built-in"
    }

    /// The file or directory; nil for the built-in default.
    public var path: String?
    public var origin: Origin

    public init(path: String?, origin: Origin) {
        self.path = path
        self.origin = origin
    }

    /// `/etc/meterwise/policies.d (system drop-ins)`, `built-in default (policies/default.yaml)`, ...
    public var description: String {
        switch origin {
        case .explicit: return path ?? "?"
        case .user: return "\(path ?? "?") (user drop-ins)"
        case .system: return "\(path ?? "?") (system drop-ins)"
        case .builtIn: return ShippedPolicy.name
        }
    }

    /// Reads the policy this source names.
    public func load() throws(PolicyError) -> PolicySet {
        guard let path else { return ShippedPolicy.defaultPolicy() }
        return try PolicySet.load(path: path)
    }
}

/// The one resolver of the policy's location: `--policy` when given; else the user's drop-in directory
/// (not for root) or the system's, the first that exists; else the built-in default.
public enum PolicyLocator {
    /// The system's drop-in directory.
    public static let systemDirectory = "/etc/meterwise/policies.d"

    /// The user's drop-in directory: `$XDG_CONFIG_HOME/meterwise/policies.d`, or
    /// `$HOME/.config/meterwise/policies.d` when XDG_CONFIG_HOME is unset or empty.
    public static func userDirectory(environment: [String: String]) -> String? {
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") {
            return config + "/meterwise/policies.d"
        }
        if let home = environment["HOME"], home.hasPrefix("/") {
            return (home == "/" ? "" : home) + "/.config/meterwise/policies.d"
        }
        return nil
    }

    /// Decides where the policy is. Pure: the caller passes who runs, the environment and a way to ask
    /// whether a path exists.
    public static func resolve(
        explicit: String?, isRoot: Bool, environment: [String: String], exists: (String) -> Bool
    ) -> PolicySource {
        if let explicit, !explicit.isEmpty { return PolicySource(path: explicit, origin: .explicit) }
        if !isRoot, let user = userDirectory(environment: environment), exists(user) {
            return PolicySource(path: user, origin: .user)
        }
        if exists(systemDirectory) { return PolicySource(path: systemDirectory, origin: .system) }
        return PolicySource(path: nil, origin: .builtIn)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension PolicyLocator {
    /// `resolve` for this process: its uid, its environment and the file system.
    /// `asUser`: look in the user's drop-in directory even as root (a `daemon --user`).
    public static func current(explicit: String?, asUser: Bool = false) -> PolicySource {
        resolve(
            explicit: explicit, isRoot: getuid() == 0 && !asUser, environment: ProcessInfo.processInfo.environment,
            exists: { path in
                var info = stat()
                return stat(path, &info) == 0
            })
    }
}
