import Foundation

/// Unbuffered line output, so `--watch` lines reach a pipe the moment they happen.
enum Output {
    /// Writes a line to standard output. When its reader has gone (`watch --json | head`: a closed pipe),
    /// nothing more can be shown: the command ends quietly instead of trapping on the write.
    static func line(_ text: String) {
        do {
            try FileHandle.standardOutput.write(contentsOf: Data((text + "\n").utf8))
        } catch {
            exit(errno == EPIPE || "\(error)".contains("Broken pipe") ? 0 : 74)
        }
    }

    static func error(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}
