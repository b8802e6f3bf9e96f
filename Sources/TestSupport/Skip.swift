import Foundation
import Lab

/// Kernel tests that cannot run here say why, on stderr, instead of skipping silently.
public enum KernelTestGate {
    /// Nil when network namespaces are usable; otherwise the reason, already printed.
    public static func skipReason(_ test: String) -> String? {
        guard let reason = Netns.unavailableReason() else { return nil }
        FileHandle.standardError.write(Data("SKIPPED \(test): \(reason)\n".utf8))
        return reason
    }
}
