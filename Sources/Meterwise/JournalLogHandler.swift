import Foundation
import Logging

/// Log lines for journald when it reads our stderr (`JOURNAL_STREAM` set): each line starts with its
/// syslog priority (`<3>` error ... `<7>` debug, sd-daemon(3)), so the journal keeps the levels.
struct JournalLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Whether stderr is the journal: `JOURNAL_STREAM` names its device and inode (systemd.exec(5)).
    static func stderrIsJournal(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        guard let stream = environment["JOURNAL_STREAM"] else { return false }
        let parts = stream.split(separator: ":")
        var info = stat()
        guard parts.count == 2, fstat(STDERR_FILENO, &info) == 0 else { return false }
        return UInt64(parts[0]) == UInt64(info.st_dev) && UInt64(parts[1]) == UInt64(info.st_ino)
    }

    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        case .critical: return 2
        }
    }

    /// `<6>meterwise.engine: message key=value` (the journal adds the time and the unit).
    static func line(level: Logger.Level, label: String, message: Logger.Message, metadata: Logger.Metadata) -> String {
        let pairs = metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let text = "\(message)".replacingOccurrences(of: "\n", with: "\n<\(priority(level))>")
        return "<\(priority(level))>\(label): \(text)" + (pairs.isEmpty ? "" : " " + pairs) + "\n"
    }

    func log(event: LogEvent) {
        let all = event.metadata.map { metadata.merging($0) { _, new in new } } ?? metadata
        FileHandle.standardError.write(
            Data(Self.line(level: event.level, label: label, message: event.message, metadata: all).utf8))
    }
}
