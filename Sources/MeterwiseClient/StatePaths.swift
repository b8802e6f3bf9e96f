import Foundation

/// Where a daemon keeps its state and its control socket, and which daemon a client talks to.
public enum StatePaths {
    /// Which daemon: the system's (a root service: `/var/lib`, `/run`) or a user's own (XDG paths).
    public enum Scope: Sendable {
        case system
        case user
    }

    static var isRoot: Bool { getuid() == 0 }
    static var environment: [String: String] { ProcessInfo.processInfo.environment }

    /// The system daemon's socket (the packaged unit's `--socket`).
    public static let systemSocket = "/run/meterwise/meterwise.sock"

    /// The scope of a daemon started without `--user`: the system's as root, the user's otherwise.
    public static var defaultScope: Scope { isRoot ? .system : .user }

    /// `/var/lib/meterwise` as root; `$XDG_STATE_HOME/meterwise` (default `~/.local/state/meterwise`).
    public static var stateDirectory: String { stateDirectory(defaultScope) }

    /// The daemon's default socket: `$METERWISE_SOCKET` when set, else `socket(defaultScope)`.
    public static var socket: String { explicitSocket ?? socket(defaultScope) }

    /// The state directory of a daemon of this scope.
    public static func stateDirectory(_ scope: Scope) -> String {
        if scope == .system { return "/var/lib/meterwise" }
        if let xdg = environment["XDG_STATE_HOME"], xdg.hasPrefix("/") { return xdg + "/meterwise" }
        // $HOME as the user's shell has it (like the policy lookup), else the password database's.
        let home = environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? NSHomeDirectory()
        return (home == "/" ? "" : home) + "/.local/state/meterwise"
    }

    /// The socket of a daemon of this scope: `/run/meterwise/meterwise.sock`, or for a user's daemon
    /// `$XDG_RUNTIME_DIR/meterwise.sock` (the state directory without a runtime directory).
    public static func socket(_ scope: Scope) -> String {
        if scope == .system { return systemSocket }
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") { return runtime + "/meterwise.sock" }
        return stateDirectory(.user) + "/meterwise.sock"
    }

    /// The socket a client talks to: `$METERWISE_SOCKET` when set; else the user's own daemon when one
    /// listens, then the system's; with neither, the one this user would start (so the error names it).
    public static var clientSocket: String {
        if let explicitSocket { return explicitSocket }
        let candidates = [socket(.user), systemSocket]
        return candidates.first(where: isSocket) ?? socket(defaultScope)
    }

    /// `$METERWISE_SOCKET`, when set.
    public static var explicitSocket: String? {
        guard let explicit = environment["METERWISE_SOCKET"], !explicit.isEmpty else { return nil }
        return explicit
    }

    static func isSocket(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK
    }
}
