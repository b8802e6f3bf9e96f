import Foundation

/// Paths inside the repository, found from this source file's location.
public enum RepoPaths {
    /// The repository root (the folder with Package.swift).
    public static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    public static func file(_ relative: String) -> String { root.appendingPathComponent(relative).path }

    /// The built `meterwise` binary of the current build configuration (`swift build` builds it before
    /// `swift test` runs). Looks next to the test bundle first.
    public static var binary: String {
        let bundleDir = Bundle.main.bundleURL.deletingLastPathComponent()
        for candidate in [
            bundleDir.appendingPathComponent("meterwise").path,
            Bundle.main.bundleURL.appendingPathComponent("meterwise").path,
            root.appendingPathComponent(".build/debug/meterwise").path,
        ]
        where FileManager.default.isExecutableFile(atPath: candidate) {
            return candidate
        }
        return root.appendingPathComponent(".build/debug/meterwise").path
    }
}
