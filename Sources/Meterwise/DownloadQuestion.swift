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

    var sizeProblem: String { "--size \(size ?? "") is not a size; \(Units.bytesHint)." }
}
