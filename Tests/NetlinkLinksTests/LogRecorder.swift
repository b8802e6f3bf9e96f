import Logging
import Synchronization

/// A log handler that keeps every message in memory, for tests that check what a component logged.
final class LogRecorder: Sendable {
    let entries = Mutex<[(level: Logger.Level, message: String)]>([])

    var logger: Logger {
        var logger = Logger(label: "test") { _ in Handler(recorder: self) }
        logger.logLevel = .trace
        return logger
    }

    struct Handler: LogHandler {
        let recorder: LogRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            recorder.entries.withLock { $0.append((event.level, "\(event.message)")) }
        }
    }
}
