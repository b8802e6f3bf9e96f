import Foundation

/// Says on stderr why a test could not run here (`SKIPPED <test>: <reason>`), like `KernelTestGate`.
func skip(_ test: String, _ reason: String) {
    FileHandle.standardError.write(Data("SKIPPED \(test): \(reason)\n".utf8))
}
