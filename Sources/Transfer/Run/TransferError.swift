/// The one error type of the Transfer module. `message` says what went wrong and how to fix it.
public struct TransferError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What kind of failure this is; stable for programs that branch on it. The raw value (`invalid_url`) is
    /// what `get --json` prints as `code`: snake_case, like every value of the JSON contract.
    public enum Code: String, Sendable, Codable {
        /// The URL cannot be used (bad syntax, unsupported scheme).
        case invalidURL = "invalid_url"
        /// The final file exists and `force` was not set.
        case destinationExists = "destination_exists"
        /// The partial file or checkpoint could not be read or written.
        case fileSystem = "file_system"
        /// The server answered with a status that retrying cannot fix (404, 403, ...).
        case httpStatus = "http_status"
        /// Retries were exhausted (connection resets, timeouts, 5xx, truncated bodies).
        case retriesExhausted = "retries_exhausted"
        /// The object kept changing while it was downloaded.
        case objectUnstable = "object_unstable"
        /// The finished file's sha256 is not the expected one.
        case checksumMismatch = "checksum_mismatch"
        /// The finished file's length is not the server's length.
        case lengthMismatch = "length_mismatch"
        /// More than 10 redirects.
        case tooManyRedirects = "too_many_redirects"
        /// A redirect from https to http (refused).
        case insecureRedirect = "insecure_redirect"
        /// The server's answer breaks HTTP in a way the downloader cannot work around.
        case protocolViolation = "protocol_violation"
        /// `run()` was called while the download was already running.
        case alreadyRunning = "already_running"
        /// The download was cancelled.
        case cancelled
        /// The user the download runs for may not write there, or a file found there is not theirs.
        case permission = "permission_denied"
        /// Another download is writing the same file now.
        case outputBusy = "output_busy"
        /// The object is larger than the maximum size asked for, or than the free space.
        case tooLarge = "too_large"
        /// A TLS failure retrying cannot fix: the server's certificate did not verify (untrusted issuer,
        /// expired, another host's), or the server wants or refused a client certificate.
        case tls
        /// A CA, certificate or key file given for TLS cannot be read or used.
        case tlsSetup = "tls_setup"
        /// The proxy refused to carry the request (it wants credentials, or refused the tunnel).
        case proxy
        /// A captive portal or an intercepting proxy answered instead of the server (docs/get.md,
        /// "Interception"): nothing of its answer was written and the partial is kept.
        case intercepted
        /// A `.zsync` control file cannot be read (docs/delta.md): malformed, or for another object.
        case controlFile = "control_file"
        /// A Metalink file (docs/mirrors.md) cannot be used: malformed, hostile, or for no file at all.
        case metalink
        /// Every source of a download with several was dropped (docs/mirrors.md); each one's reason is said.
        case noSources = "no_sources"
        /// The caller refused a URL the download was about to ask (`DownloadRequest.judgeSource`): it is reached
        /// over a link the job may not use.
        case linkNotAllowed = "link_not_allowed"
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
