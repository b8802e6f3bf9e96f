/// The one error type of the Transfer module. `message` says what went wrong and how to fix it.
public struct TransferError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What kind of failure this is; stable for programs that branch on it.
    public enum Code: String, Sendable, Codable {
        /// The URL cannot be used (bad syntax, unsupported scheme).
        case invalidURL
        /// The final file exists and `force` was not set.
        case destinationExists
        /// The partial file or checkpoint could not be read or written.
        case fileSystem
        /// The server answered with a status that retrying cannot fix (404, 403, ...).
        case httpStatus
        /// Retries were exhausted (connection resets, timeouts, 5xx, truncated bodies).
        case retriesExhausted
        /// The object kept changing while it was downloaded.
        case objectUnstable
        /// The finished file's sha256 is not the expected one.
        case checksumMismatch
        /// The finished file's length is not the server's length.
        case lengthMismatch
        /// More than 10 redirects.
        case tooManyRedirects
        /// A redirect from https to http (refused).
        case insecureRedirect
        /// The server's answer breaks HTTP in a way the downloader cannot work around.
        case protocolViolation
        /// `run()` was called while the download was already running.
        case alreadyRunning
        /// The download was cancelled.
        case cancelled
    }

    /// What kind of failure this is.
    public var code: Code
    /// A sentence for the user: what happened and what to do about it.
    public var message: String
    /// The underlying error, if any.
    public var cause: (any Error & Sendable)?

    /// Creates an error.
    public init(_ code: Code, _ message: String, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    /// Equal when code and message are (the cause is not compared).
    public static func == (a: TransferError, b: TransferError) -> Bool {
        a.code == b.code && a.message == b.message
    }

    public var description: String {
        if let cause { return "\(message) (\(cause))" }
        return message
    }
}
