import ArgumentParser
import Transfer

/// The sources of one file beyond its URL, for `get` (docs/mirrors.md): more URLs, `--mirror`, and a
/// Metalink file.
struct MirrorOptions: ParsableArguments {
    @Option(
        name: .customLong("mirror"),
        help: ArgumentHelp("Another URL of the same file (may be repeated; so may URLs).", valueName: "url"))
    var mirrors: [String] = []

    @Option(
        help: ArgumentHelp(
            "A Metalink file (.meta4, or v3 .metalink), a path or a URL: its URLs, size, hashes and piece hashes.",
            valueName: "file|url"))
    var metalink: String?

    @Flag(
        name: .customLong("no-follow-metalink"),
        help: "Save a Metalink file a server answers with, rather than download the file it describes.")
    var noFollowMetalink = false

    /// Whether `metalink` names a URL to fetch rather than a file.
    var metalinkIsRemote: Bool {
        guard let metalink else { return false }
        let lower = metalink.lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }

    /// The file name a Metalink URL suggests: its last path part without `.meta4` or `.metalink`.
    var metalinkURLName: String? {
        guard metalinkIsRemote, let metalink, var name = OutputName.from(url: metalink) else { return nil }
        for suffix in [".meta4", ".metalink"] where name.hasSuffix(suffix) && name.count > suffix.count {
            name.removeLast(suffix.count)
            return name
        }
        return nil
    }

    /// The set for `urls` and these options; nil for a download from one URL without a Metalink file.
    /// A local Metalink file is read here, with the user's own rights.
    func mirrorSet(urls: [String]) throws(TransferError) -> (set: MirrorSet, name: String?)? {
        let given = urls + mirrors
        guard let metalink else {
            guard given.count > 1 else { return nil }
            return (MirrorSet(sources: given.map { MirrorSet.Source(url: $0) }), nil)
        }
        if metalinkIsRemote {
            return (MirrorSet(sources: given.map { MirrorSet.Source(url: $0) }, metalinkURL: metalink), metalinkURLName)
        }
        let parsed = try Metalink.parse(try Metalink.readFile(atPath: metalink), source: metalink)
        guard let file = parsed.files.first else { throw TransferError(.metalink, "\(metalink) describes no file.") }
        return (MirrorSet(file: file, extra: given), file.name)
    }
}
