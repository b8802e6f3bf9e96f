import ArgumentParser
import ConfigKit
import Foundation
import Policy

/// The download `check` and `run` ask the policy about: its size, tags and permission to use metered links.
struct DownloadQuestion: ParsableArguments {
    @Option(help: "The download's size, e.g. 700MiB.")
    var size: String?

    @Option(name: .customLong("tag"), help: "A tag the policy's rules match (repeatable), e.g. apt.")
    var tags: [String] = []

    @Flag(help: "The download may use metered links (as a job's allow_metered).")
    var allowMetered = false

    /// The job to decide; nil when the size is not one (`sizeProblem` says why, the caller exits 2).
    func job(id: String) -> JobInfo? {
        var bytes: Int64?
        if let size {
            guard let parsed = Units.parseBytes(size) else { return nil }
            bytes = parsed
        }
        return JobInfo(id: id, size: bytes, tags: tags, allowMetered: allowMetered)
    }

    /// The question as the API's query (`GET /v1/decision?...`, `GET /v1/events?...`).
    static func query(_ job: JobInfo) -> String {
        var query = ["allow_metered=\(job.allowMetered)"]
        if let size = job.size { query.append("size=\(size)") }
        if !job.tags.isEmpty {
            let joined = job.tags.joined(separator: ",")
            query.append(
                "tags="
                    + (joined.addingPercentEncoding(
                        withAllowedCharacters: .alphanumerics.union(.init(charactersIn: ",-_."))) ?? joined))
        }
        return query.joined(separator: "&")
    }

    var sizeProblem: String { "--size \(size ?? "") is not a size; \(Units.bytesHint)." }
}
