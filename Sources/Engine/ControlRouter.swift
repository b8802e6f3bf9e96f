import Foundation
import Links
import MeterwiseClient
import Policy

/// A response of the control API: a status and a JSON (or text) body.
public struct ControlResponse: Sendable {
    public var status: Int
    public var contentType: String
    public var body: Data

    public static func json(_ value: some Encodable, status: Int = 200) -> ControlResponse {
        let data = (try? ControlAPI.encoder().encode(value)) ?? Data("{}".utf8)
        return ControlResponse(status: status, contentType: "application/json", body: data + Data("\n".utf8))
    }

    public static func error(_ error: EngineError) -> ControlResponse {
        let status: Int
        switch error.code {
        case .notFound: status = 404
        case .invalidRequest: status = 400
        case .conflict: status = 409
        case .forbidden: status = 403
        case .quota: status = 429
        case .store, .socket, .linkMonitor: status = 500
        }
        return json(ControlAPI.ErrorBody(error: error.description, code: error.code.rawValue), status: status)
    }
}

/// Routes control API requests to the engine. Everything but the event stream.
public struct ControlRouter<C: Clock>: Sendable where C.Duration == Duration, C.Instant: Sendable {
    public let engine: Engine<C>

    public init(engine: Engine<C>) {
        self.engine = engine
    }

    /// Answers one request from `asker`: users see and control only their own jobs (root sees all).
    public func handle(method: String, path: String, body: Data, asker: Asker = .process) async -> ControlResponse {
        let parts = path.split(separator: "?").first.map { $0.split(separator: "/").map(String.init) } ?? []
        let id = parts.count >= 3 && parts[0] == "v1" && parts[1] == "jobs" ? parts[2] : nil
        let route = (
            method,
            parts.count >= 2 ? "/" + parts.prefix(2).joined(separator: "/") : "/" + parts.joined(separator: "/"),
            parts.count
        )
        do {
            // Only the decision routes take parameters; elsewhere a query is a mistake worth saying.
            let query = try QueryString.of(target: path)
            if route.1 != "/v1/decision" && route.1 != "/v1/usage" && !query.parameters.isEmpty {
                throw EngineError(.invalidRequest, "\(Self.pathOf(path)) takes no query parameters: see docs/api.md")
            }
            switch route {
            case ("GET", "/v1/jobs", 2):
                return .json(await engine.list(for: asker))
            case ("POST", "/v1/jobs", 2):
                let spec: JobSpec
                try Self.refuseDuplicateKeys(body)
                do {
                    spec = try ControlAPI.decoder().decode(JobSpec.self, from: body)
                } catch {
                    throw EngineError(
                        .invalidRequest,
                        "the body must be a JSON job {\"url\": ..., \"destination\": ...}: \(Self.describe(error))")
                }
                let record = try await engine.add(spec, by: asker)
                return .json(try await engine.status(record.id, for: asker), status: 201)
            case ("GET", "/v1/jobs", 3):
                return .json(try await engine.status(id!, for: asker))
            case ("GET", "/v1/jobs", 4) where parts[3] == "explain":
                let explanation = try await engine.explain(id!, for: asker)
                let decision = explanation.decision
                return .json(
                    ControlAPI.ExplainBody(
                        action: decision.action.rawValue, rule: decision.rule, rate: decision.rate,
                        reasons: decision.reasons, allowedLinks: decision.allowedLinks, text: explanation.text))
            case ("POST", "/v1/jobs", 4):
                guard let command = ControlAPI.JobCommand(rawValue: parts[3]) else {
                    throw EngineError(.invalidRequest, "unknown action \(parts[3]): use pause, resume or cancel")
                }
                switch command {
                case .pause: try await engine.pause(id!, for: asker)
                case .resume: try await engine.resume(id!, for: asker)
                case .cancel: try await engine.cancel(id!, for: asker)
                }
                return .json(try await engine.status(id!, for: asker))
            case ("GET", "/v1/decision", 2):
                var job = try Self.decisionQuery(path)
                job.owner = asker.uid
                await engine.noteQuestion()
                return .json(Self.decisionBody(await engine.decide(job).decision))
            case ("POST", "/v1/usage", 2):
                // Bytes a program moved outside the daemon (`meterwise run`), for the question in the query;
                // a per-user budget counts them against the asker's own share.
                var job = try Self.decisionQuery(path)
                job.owner = asker.uid
                let report: ControlAPI.UsageBody
                try Self.refuseDuplicateKeys(body)
                do {
                    report = try ControlAPI.decoder().decode(ControlAPI.UsageBody.self, from: body)
                } catch {
                    throw EngineError(.invalidRequest, "the body must be {\"bytes\": N}: \(Self.describe(error))")
                }
                guard report.bytes >= 0, report.bytes <= 1 << 40 else {
                    throw EngineError(.invalidRequest, "bytes must be from 0 to 2^40 per report, not \(report.bytes)")
                }
                let (counted, answer) = await engine.recordUsage(bytes: report.bytes, for: job)
                var body = Self.decisionBody(answer.decision)
                body.countedBytes = counted
                return .json(body)
            case ("GET", "/v1/links", 2):
                return .json(LinkSnapshotDocument(await engine.snapshot, verdict: NetworkClass.builtInVerdict))
            case ("GET", "/metrics", 1):
                // Every job's figures: for root and the daemon's own user only.
                guard asker.seesEveryJob else {
                    throw EngineError(.forbidden, "/metrics is for root and the daemon's user")
                }
                let text = await Metrics.render(engine: engine)
                return ControlResponse(status: 200, contentType: Metrics.contentType, body: Data(text.utf8))
            default:
                throw EngineError(.notFound, "no route \(method) \(path): see docs/api.md")
            }
        } catch let error as EngineError {
            return .error(error)
        } catch {
            return .error(EngineError(.store, "\(error)"))
        }
    }
}

extension ControlRouter {
    /// The path of a request target, without its query.
    static func pathOf(_ target: String) -> Substring {
        target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
    }

    static func decisionBody(_ decision: Decision) -> ControlAPI.DecisionBody {
        ControlAPI.DecisionBody(decision, source: "daemon")
    }

    /// The job a `GET /v1/decision?size=N&tags=a,b&allow_metered=true&allow_roaming=true&priority=P` asks
    /// about. Every value is checked against its range before use.
    static func decisionQuery(_ path: String) throws(EngineError) -> JobInfo {
        var job = JobInfo(id: "check")
        for (name, value) in try QueryString.of(target: path).parameters {
            switch name {
            case "size":
                guard let size = Int64(value), (0...(1 << 50)).contains(size) else {
                    throw EngineError(
                        .invalidRequest,
                        "size must be a number of bytes from 0 to 2^50, not `\(QueryString.visible(value))`")
                }
                job.size = size
            case "tags":
                job.tags = value.split(separator: ",").map(String.init).filter { !$0.isEmpty }
                guard job.tags.count <= 64, job.tags.allSatisfy({ $0.utf8.count <= 256 }) else {
                    throw EngineError(.invalidRequest, "at most 64 tags of at most 256 bytes each")
                }
            case "allow_metered": job.allowMetered = try flag(name, value)
            case "allow_roaming": job.allowRoaming = try flag(name, value)
            case "priority":
                // The range a job's priority has (JobSpec).
                guard let priority = Int(value), (-1_000_000...1_000_000).contains(priority) else {
                    throw EngineError(
                        .invalidRequest,
                        "priority must be a number from -1000000 to 1000000, not `\(QueryString.visible(value))`")
                }
                job.priority = priority
            default:
                throw EngineError(
                    .invalidRequest,
                    "unknown parameter `\(QueryString.visible(name))`: use size, tags, allow_metered, allow_roaming, priority"
                )
            }
        }
        return job
    }

    /// `true`/`1`/`yes` or `false`/`0`/`no`.
    static func flag(_ name: String, _ value: String) throws(EngineError) -> Bool {
        switch value {
        case "true", "1", "yes": return true
        case "false", "0", "no": return false
        default:
            throw EngineError(.invalidRequest, "\(name) must be true or false, not `\(QueryString.visible(value))`")
        }
    }
}

extension ControlRouter {
    /// A decoding failure in words a client can act on: the key and what is wrong with it.
    /// A body with a key given twice in one object is refused (`JSONKeys`): which of the two counts would be
    /// the decoder's choice, not the asker's.
    static func refuseDuplicateKeys(_ body: Data) throws(EngineError) {
        if let key = JSONKeys.duplicate(in: body) {
            throw EngineError(
                .invalidRequest,
                "the key \"\(ShownText.escaped(String(key.prefix(64))))\" is given twice in one object; give each key once"
            )
        }
    }

    static func describe(_ error: any Error) -> String {
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.map(\.stringValue).joined(separator: ".")
        }
        switch error {
        case DecodingError.keyNotFound(let key, _):
            return "missing key \"\(key.stringValue)\""
        case DecodingError.typeMismatch(let type, let context), DecodingError.valueNotFound(let type, let context):
            let field = path(context)
            return (field.isEmpty ? "the body" : "\"\(field)\"") + " must be " + kind(type)
        case DecodingError.dataCorrupted(let context):
            if context.debugDescription.hasPrefix("unknown key") { return context.debugDescription }
            // Numbers that do not fit (a priority of 1e30, a size of 1.5) land here too.
            return context.codingPath.isEmpty ? "not valid JSON" : "\"\(path(context))\" has a value out of range"
        default:
            return "not valid JSON"
        }
    }

    /// What a JSON value of Swift type `type` is called for people.
    static func kind(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "true or false"
        case is Int.Type, is Int64.Type, is Int32.Type, is UInt64.Type: "a whole number"
        case is Double.Type: "a number"
        case is [Any].Type, is [String].Type: "an array"
        case is [String: Any].Type: "a JSON object"
        default: "of another type"
        }
    }
}
