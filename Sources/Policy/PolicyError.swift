import ConfigKit

/// Every error of the Policy module. A policy that does not load lists every problem found, each at
/// `file:line:column` with a hint, not only the first.
public struct PolicyError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable, Hashable {
        /// One or more files have problems; see `issues`.
        case invalid
        /// The path does not exist or cannot be read.
        case unreadable
    }

    public var code: Code
    public var issues: [ConfigIssue]
    /// What to do about it.
    public var message: String

    public init(code: Code = .invalid, issues: [ConfigIssue], message: String? = nil) {
        self.code = code
        self.issues = issues
        self.message =
            message
            ?? "\(issues.count) problem\(issues.count == 1 ? "" : "s") in the policy; fix them and run `meterwise policy check` again"
    }

    public var description: String {
        (issues.map(\.description) + [message]).joined(separator: "\n")
    }
}
