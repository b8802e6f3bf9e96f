import Foundation
import Links
import Policy
import Transfer

/// The JSON shapes of the control API (docs/api.md). Shared by the daemon and the CLI client.
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
    public struct ExplainBody: Codable, Sendable {
        public var action: String
        public var rule: String?
        public var rate: Int64?
        public var reasons: [String]
        public var allowedLinks: [String]
        public var text: String
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

    /// The event as the API sends it; nil for events the API does not stream.
    public static func body(for event: EngineEvent, at date: Date = Date()) -> EventBody? {
        switch event {
        case let .links(snapshot):
            var body = EventBody(event: "links", at: date)
            body.primary = snapshot.primary?.name
            body.kind = snapshot.primary?.kind.rawValue
            return body
        case let .decision(job, decision):
            var body = EventBody(event: "decision", job: job, at: date)
            body.action = decision.action.rawValue
            body.rule = decision.rule
            body.reason = decision.reasons.first
            body.rate = decision.rate
            return body
        case let .started(job, link, _, resumedFrom):
            var body = EventBody(event: "started", job: job, at: date)
            body.link = link
            body.bytesDone = resumedFrom
            return body
        case let .paused(job, reason, byUser):
            var body = EventBody(event: byUser ? "paused-by-user" : "paused", job: job, at: date)
            body.reason = reason
            return body
        case let .waiting(job, remaining):
            var body = EventBody(event: "waiting", job: job, at: date)
            body.reason = "resuming in \(remaining)"
            return body
        case let .throttled(job, rate):
            var body = EventBody(event: "throttled", job: job, at: date)
            body.rate = rate
            return body
        case let .progress(job, progress):
            var body = EventBody(event: "progress", job: job, at: date)
            body.bytesDone = progress.bytesDone
            body.totalBytes = progress.totalBytes
            body.bytesPerSecond = progress.bytesPerSecond
            return body
        case let .notice(job, text):
            var body = EventBody(event: "notice", job: job, at: date)
            body.reason = text
            return body
        case let .completed(job, result):
            var body = EventBody(event: "completed", job: job, at: date)
            body.sha256 = result.sha256
            body.bytesDone = result.totalBytes
            body.totalBytes = result.totalBytes
            return body
        case let .failed(job, text):
            var body = EventBody(event: "failed", job: job, at: date)
            body.reason = text
            return body
        case let .cancelled(job):
            return EventBody(event: "cancelled", job: job, at: date)
        case let .added(job):
            return EventBody(event: "added", job: job, at: date)
        }
    }
}
