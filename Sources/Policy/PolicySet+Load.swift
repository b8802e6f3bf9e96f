import ConfigKit
import Links

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension PolicySet {
    /// Loads a policy from a file, or from every `*.yaml` / `*.yml` file of a directory in lexical order
    /// (like systemd drop-ins). Every problem in every file is reported. The only I/O of this module.
    public static func load(path: String) throws(PolicyError) -> PolicySet {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw PolicyError(
                code: .unreadable, issues: [],
                message: "\(path): no such file or directory; give a policy file or a directory of *.yaml files")
        }
        var names: [String] = []
        if (info.st_mode & S_IFMT) == S_IFDIR {
            guard let dir = opendir(path) else {
                throw PolicyError(
                    code: .unreadable, issues: [], message: "\(path): cannot open the directory; check its permissions")
            }
            defer { closedir(dir) }
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                if name.hasPrefix(".") { continue }
                if name.hasSuffix(".yaml") || name.hasSuffix(".yml") {
                    names.append(path.hasSuffix("/") ? path + name : path + "/" + name)
                }
            }
            names.sort { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
            if names.isEmpty {
                throw PolicyError(
                    code: .unreadable, issues: [],
                    message: "\(path) holds no *.yaml files; add one (see policies/default.yaml)")
            }
        } else {
            names = [path]
        }
        var files: [(name: String, text: String)] = []
        var issues: [ConfigIssue] = []  // files too large or not UTF-8
        for name in names {
            let text: String?
            do {
                text = try ConfigText.read(name)
            } catch {
                issues.append(error)
                continue
            }
            guard let text else {
                throw PolicyError(
                    code: .unreadable, issues: [], message: "\(name): cannot read the file; check its permissions")
            }
            files.append((name, text))
        }
        guard issues.isEmpty else { throw PolicyError(issues: issues) }
        return try parse(files: files)
    }
}
