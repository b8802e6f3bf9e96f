import Foundation

/// Where the daemon keeps its state and socket: system paths as root, XDG paths otherwise.
public enum StatePaths {
    static var isRoot: Bool { getuid() == 0 }
    static var environment: [String: String] { ProcessInfo.processInfo.environment }

    /// `/var/lib/meterwise` as root; `$XDG_STATE_HOME/meterwise` (default `~/.local/state/meterwise`).
    public static var stateDirectory: String {
        if isRoot { return "/var/lib/meterwise" }
        if let xdg = environment["XDG_STATE_HOME"], xdg.hasPrefix("/") { return xdg + "/meterwise" }
        // $HOME as the user's shell has it (like the policy lookup), else the password database's.
        let home = environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? NSHomeDirectory()
        return (home == "/" ? "" : home) + "/.local/state/meterwise"
    }

    /// `/run/meterwise/meterwise.sock` as root; `$XDG_RUNTIME_DIR/meterwise.sock`, or the state directory.
    public static var socket: String {
        if let explicit = environment["METERWISE_SOCKET"], !explicit.isEmpty { return explicit }
        if isRoot { return "/run/meterwise/meterwise.sock" }
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") { return runtime + "/meterwise.sock" }
        return stateDirectory + "/meterwise.sock"
    }
}
