import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// SIGINT/SIGTERM as an AsyncStream: the default action is replaced so the command can pause cleanly.
///
/// A signal ignored when the process started stays ignored and is not listened for, as shells and coreutils
/// keep it: a script that runs `meterwise get … &` (SIGINT and SIGQUIT ignored for it) does not see its
/// download stopped by the Ctrl-C meant for the script. Before, such a SIGINT was dropped in the first
/// milliseconds and acted on after, depending on when it came.
final class SignalStream {
    let stream: AsyncStream<Int32>
    private let continuation: AsyncStream<Int32>.Continuation
    private let sources: [any DispatchSourceSignal]
    /// The signals listened for: those asked for that were not ignored at the start.
    let handled: [Int32]

    init(signals: [Int32]) {
        (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        handled = signals.filter { !Self.isIgnored($0) }
        let queue = DispatchQueue(label: "meterwise.signals")
        var sources: [any DispatchSourceSignal] = []
        for number in handled {
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
        for number in handled { signal(number, SIG_DFL) }
        continuation.finish()
    }

    /// Whether `number`'s action is "ignore" now.
    static func isIgnored(_ number: Int32) -> Bool {
        var action = sigaction()
        guard sigaction(number, nil, &action) == 0, action.sa_flags & SA_SIGINFO == 0 else { return false }
        return unsafeBitCast(action.__sigaction_handler.sa_handler, to: Int.self)
            == unsafeBitCast(SIG_IGN, to: Int.self)
    }
}
