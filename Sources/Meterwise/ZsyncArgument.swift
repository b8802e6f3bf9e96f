/// `--zsync` takes its control file's URL as an optional value (`get URL --zsync [CONTROL]`), which the
/// argument parser has no form for: the value is moved to `--zsync-url`. Pure.
enum ZsyncArgument {
    /// The arguments (without the program name) with `--zsync VALUE` and `--zsync=VALUE` of `get` and `add`
    /// turned into `--zsync --zsync-url VALUE`. A word after `--zsync` is its value when it names a control file
    /// (ends in `.zsync`) or when the download's URL came before it; otherwise it is left as it is.
    static func rewrite(_ arguments: [String]) -> [String] {
        guard let command = arguments.first, command == "get" || command == "add" else { return arguments }
        var out: [String] = []
        var sawURL = false
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let word = arguments[index]
            index += 1
            if optionsEnded || word == "--" {
                optionsEnded = true
                out.append(word)
                continue
            }
            if word.hasPrefix("--zsync=") {
                out += ["--zsync", "--zsync-url", String(word.dropFirst("--zsync=".count))]
                continue
            }
            if word == "--zsync", index < arguments.count {
                let next = arguments[index]
                if !next.hasPrefix("-"), sawURL || isControlName(next) {
                    out += ["--zsync", "--zsync-url", next]
                    index += 1
                    continue
                }
            }
            if word.contains("://"), !word.hasPrefix("-") { sawURL = true }
            out.append(word)
        }
        return out
    }

    static func isControlName(_ word: String) -> Bool {
        let end = word.firstIndex { $0 == "?" || $0 == "#" } ?? word.endIndex
        return word[..<end].hasSuffix(".zsync")
    }
}
