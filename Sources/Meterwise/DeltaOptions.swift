import ArgumentParser

/// A delta download's options, for `get` and `add` (docs/delta.md). `--zsync CONTROL` reaches `zsyncURL`
/// through `ZsyncArgument`.
struct DeltaOptions: ParsableArguments {
    @Flag(
        help:
            "Fetch only what changed (docs/delta.md): read the zsync control file URL.zsync, take every block the file at -o and the --seed files already hold, and fetch the rest."
    )
    var zsync = false

    @Option(
        name: .customLong("zsync-url"),
        help: ArgumentHelp(
            "The control file's URL or path, when it is not URL.zsync (`--zsync CONTROL` works too).",
            valueName: "control"))
    var zsyncURL: String?

    @Option(
        name: .customLong("seed"),
        help: ArgumentHelp("An older version to take blocks from (with --zsync; may be repeated).", valueName: "file"))
    var seeds: [String] = []

    /// Whether a delta was asked for.
    var isDelta: Bool { zsync || zsyncURL != nil }

    func validate() throws {
        if !seeds.isEmpty, !isDelta {
            throw ValidationError("--seed needs --zsync: seeds are read for a delta download only.")
        }
    }
}
