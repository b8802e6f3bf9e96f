import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// SIGINT/SIGTERM as an AsyncStream: the default action is replaced so the command can pause cleanly.
final class SignalStream {
    let stream: AsyncStream<Int32>
    private let continuation: AsyncStream<Int32>.Continuation
    private let sources: [any DispatchSourceSignal]
    private let signals: [Int32]

    init(signals: [Int32]) {
        (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        self.signals = signals
        let queue = DispatchQueue(label: "meterwise.signals")
        var sources: [any DispatchSourceSignal] = []
        for number in signals {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { [continuation] in continuation.yield(number) }
            source.resume()
            sources.append(source)
        }
        self.sources = sources
    }

    /// Stops listening (a second signal then gets the default action).
    func stop() {
        for source in sources { source.cancel() }
        for number in signals { signal(number, SIG_DFL) }
        continuation.finish()
    }
}
