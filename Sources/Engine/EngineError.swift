/// Every error of the Engine module (job store, daemon, control API). The message says what to do.
public struct EngineError: Error, Sendable, CustomStringConvertible {
    /// The `code` of an API error body: snake_case, like every key and value of the API.
    public enum Code: String, Sendable, Hashable {
        case store
        case notFound = "not_found"
        case invalidRequest = "invalid_request"
        case conflict
        /// The asker may not do this (write into a directory that is not theirs).
        case forbidden
        /// The asker holds as many unfinished jobs as the daemon allows a user (`JobQuota`).
        case quota
        case socket
        /// The link monitor failed for good: the daemon exits to be restarted.
        case linkMonitor = "link_monitor"
    }

    public var code: Code
    public var message: String
    public var cause: (any Error & Sendable)?

    public init(_ code: Code, _ message: String, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    public var description: String {
        guard let cause else { return message }
        return "\(message) (\(cause))"
    }
}
