import Foundation
import Logging

/// `--metrics-textfile PATH`: the Prometheus text written for node_exporter's textfile collector.
/// Written atomically (a hidden temporary file in the same directory, then `rename`), so a scrape never
/// reads half a file; the temporary file is created without following symlinks. Written when something
/// happened, at most once per `interval`, and once more on shutdown: an idle daemon never wakes for it.
public struct MetricsTextfile<C: Clock>: Sendable where C.Duration == Duration, C.Instant: Sendable {
    public let path: String
    public let interval: Duration
    let engine: Engine<C>
    let logger: Logger

    public init(path: String, interval: Duration = .seconds(15), engine: Engine<C>, logger: Logger) {
        self.path = path
        self.interval = interval
        self.engine = engine
        self.logger = logger
    }

    /// What is wrong with `path` as a textfile collector's file, if anything.
    public static func problem(with path: String) -> String? {
        guard path.hasSuffix(".prom") else {
            return "--metrics-textfile \(path): node_exporter's textfile collector reads only files named *.prom"
        }
        let directory = (path as NSString).deletingLastPathComponent
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory.isEmpty ? "." : directory, isDirectory: &isDirectory),
            isDirectory.boolValue
        else {
            return "--metrics-textfile \(path): no directory \(directory); point it at the collector's directory "
                + "(node_exporter --collector.textfile.directory)"
        }
        return nil
    }

    /// Writes after each burst of events until cancelled, then once more.
    public func run() async {
        var events = engine.events.subscribe(buffer: 16).makeAsyncIterator()
        var last: ContinuousClock.Instant?
        // Links that came in before this subscribed published their events already: write them now, not at
        // the next event (which may be an hour away).
        if await engine.snapshot != .empty {
            await write()
            last = .now
        }
        while await events.next() != nil {
            if let last { try? await Task.sleep(until: last + interval, clock: .continuous) }
            await write()
            last = .now
        }
        await write()
    }

    func write() async {
        let text = await Metrics.render(engine: engine)
        do {
            try Self.replace(path, with: Data(text.utf8))
        } catch {
            logger.warning("metrics textfile \(path) not written: \(error)")
        }
    }

    /// Replaces `path` whole: a new file beside it, then `rename` over it.
    static func replace(_ path: String, with data: Data) throws(EngineError) {
        let url = URL(fileURLWithPath: path)
        let temporary = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).\(getpid()).tmp").path
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw EngineError(.store, "cannot create \(temporary): \(String(cString: strerror(errno)))")
        }
        let written = data.withUnsafeBytes { buffer -> Bool in
            var offset = 0
            while offset < buffer.count {
                let n = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return false }
                offset += n
            }
            return true
        }
        let failure = errno
        close(fd)
        guard written, rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(written ? errno : failure))
            unlink(temporary)
            throw EngineError(.store, "cannot write \(path): \(reason)")
        }
    }
}
