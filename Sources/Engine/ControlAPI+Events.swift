import Foundation
import Links
import MeterwiseClient
import Policy

extension ControlAPI {
    /// A wait in whole seconds, rounded up (4.99985 s is "5"; a part of a second still to wait is one more).
    static func wholeSeconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        return attoseconds > 0 && seconds < .max ? seconds + 1 : seconds
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
        case let .paused(job, reason, byUser, timing):
            var body = EventBody(event: byUser ? "paused-by-user" : "paused", job: job, at: date)
            body.reason = reason
            body.decidedAt = timing.decidedAt
            body.stopSeconds = timing.stoppedAfter.seconds
            return body
        case let .waiting(job, remaining):
            var body = EventBody(event: "waiting", job: job, at: date)
            body.reason = "resuming in \(Self.wholeSeconds(remaining)) s"
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
            body.mode = progress.backgroundMode ? "background" : "foreground"
            body.background = progress.background.map(BackgroundFigures.init)
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
        case let .policyReloaded(files):
            var body = EventBody(event: "policy", at: date)
            body.reason = "reloaded from " + (files.isEmpty ? "the built-in default" : files.joined(separator: ", "))
            return body
        }
    }

    /// The `decision` event of a question on the event stream: no job, the question's tags.
    static func body(forQuestion question: JobInfo, _ decision: Decision, at date: Date = Date()) -> EventBody {
        var body = EventBody(event: "decision", at: date)
        body.action = decision.action.rawValue
        body.rule = decision.rule
        body.reason = decision.reasons.first
        body.rate = decision.rate
        body.tags = question.tags
        body.allowedLinks = decision.allowedLinks
        body.nextChange = decision.nextChange
        return body
    }
}
