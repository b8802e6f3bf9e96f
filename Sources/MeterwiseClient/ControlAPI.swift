import Foundation

/// The JSON shapes of the control API (docs/api.md), snake_case keys throughout. Shared by the daemon,
/// the CLI and any Swift program that links the `MeterwiseClient` library.
public enum ControlAPI {
    public static let version = "v1"

    /// `POST /v1/jobs/{id}/{action}` actions.
    public enum JobCommand: String, Sendable, CaseIterable {
        case pause, resume, cancel
    }

    public struct ErrorBody: Codable, Sendable {
        public var error: String
        public var code: String
        public init(error: String, code: String) {
            self.error = error
            self.code = code
        }
    }

    /// The explanation of a job's decision, as `GET /v1/jobs/{id}/explain` returns it.
    /// `GET /v1/decision?size=N&tags=a,b&allow_metered=true`: may a download like this run now?
    /// `POST /v1/usage`: bytes a program moved outside the daemon since its last report.
    public struct UsageBody: Codable, Sendable {
        public var bytes: Int64

        public init(bytes: Int64) {
            self.bytes = bytes
        }
    }

    public struct DecisionBody: Codable, Sendable {
        /// run, throttle or pause.
        public var action: String
        public var rule: String?
        public var rate: Int64?
        public var reasons: [String]
        public var allowedLinks: [String]
        /// When the answer can change by time alone (a window opens, a budget period ends), if it can.
        public var nextChange: Date?
        /// Where the answer came from: `daemon` (live links and budgets) or `local` (links read now,
        /// budgets unused).
        public var source: String
        /// In the answer to `POST /v1/usage`: how many of the reported bytes were counted (no more than the
        /// link really received that nothing else counted).
        public var countedBytes: Int64?

        enum CodingKeys: String, CodingKey {
            case action, rule, rate, reasons, source
            case allowedLinks = "allowed_links", nextChange = "next_change", countedBytes = "counted_bytes"
        }

        public init(
            action: String, rule: String?, rate: Int64?, reasons: [String], allowedLinks: [String],
            nextChange: Date?, source: String
        ) {
            self.action = action
            self.rule = rule
            self.rate = rate
            self.reasons = reasons
            self.allowedLinks = allowedLinks
            self.nextChange = nextChange
            self.source = source
        }

        /// The action that holds a download (the policy's `Action.pause`; this library does not link the policy).
        public static let pauseAction = "pause"

        /// Whether the policy says pause (rather than: no allowed link is up).
        public var isPause: Bool { action == Self.pauseAction }

        /// A download may start now (run or throttle, over some allowed link): the policy's `Decision.mayRun`,
        /// the one definition of "may run", on the wire's string action (a test holds the two together).
        public var mayRun: Bool { !isPause && !allowedLinks.isEmpty }

        /// The answer a question's `decision` event carries (`GET /v1/events?tags=...`, no job); nil for any
        /// other event.
        public init?(decisionEvent event: EventBody, source: String = "daemon") {
            guard event.event == "decision", event.job == nil, let action = event.action else { return nil }
            self.init(
                action: action, rule: event.rule, rate: event.rate, reasons: event.reason.map { [$0] } ?? [],
                allowedLinks: event.allowedLinks ?? [], nextChange: event.nextChange, source: source)
        }
    }

    public struct ExplainBody: Codable, Sendable {
        public var action: String
        public var rule: String?
        public var rate: Int64?
        public var reasons: [String]
        public var allowedLinks: [String]
        public var text: String

        enum CodingKeys: String, CodingKey {
            case action, rule, rate, reasons, text
            case allowedLinks = "allowed_links"
        }

        public init(
            action: String, rule: String?, rate: Int64?, reasons: [String], allowedLinks: [String], text: String
        ) {
            self.action = action
            self.rule = rule
            self.rate = rate
            self.reasons = reasons
            self.allowedLinks = allowedLinks
            self.text = text
        }
    }

    /// One event of `GET /v1/events`, a JSON object per line.
    public struct EventBody: Codable, Sendable {
        public var event: String
        public var job: String?
        public var at: Date
        public var primary: String?
        public var kind: String?
        public var action: String?
        public var rule: String?
        public var reason: String?
        public var link: String?
        public var bytesDone: Int64?
        public var totalBytes: Int64?
        public var bytesPerSecond: Double?
        public var sha256: String?
        public var rate: Int64?
        /// A question's `decision` event (no job): the tags asked about, the links allowed, and when the
        /// answer can change by time alone.
        public var tags: [String]?
        public var allowedLinks: [String]?
        public var nextChange: Date?
        /// A `paused` event: when the pause was decided (or asked for), and how long the transfer took to
        /// stop after that (the event itself comes once it has, with its checkpoint written).
        public var decidedAt: Date?
        public var stopSeconds: Double?
        /// A `progress` event: `background` or `foreground`, and background mode's figures.
        public var mode: String?
        public var background: BackgroundFigures?

        enum CodingKeys: String, CodingKey {
            case event, job, at, primary, kind, action, rule, reason, link, sha256, rate, tags, mode, background
            case bytesDone = "bytes_done", totalBytes = "total_bytes", bytesPerSecond = "bytes_per_second"
            case allowedLinks = "allowed_links", nextChange = "next_change"
            case decidedAt = "decided_at", stopSeconds = "stop_seconds"
        }

        public init(event: String, job: String? = nil, at: Date = Date()) {
            self.event = event
            self.job = job
            self.at = at
        }
    }

    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }

    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}
