import ArgumentParser
import ConfigKit
import Dispatch
import Foundation
import Logging
import MeterwiseClient
import Synchronization
import Transfer

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `meterwise get URL`: one checkpointed, resumable download. Exit codes are in docs/get.md.
struct GetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Download a URL with checkpoints; run the same command again to resume.",
        discussion: """
            SIGINT and SIGTERM pause: the checkpoint is flushed and the exit code is 130 or 143. \
            Exit codes: 0 done, 64 usage, 65 sha256 mismatch or a bad control or Metalink file, \
            69 server or network failure (with several sources: every source dropped), \
            73 output exists (use --force), 74 file system error, over --max-size or not enough free space, \
            75 another download writes the same output, 76 a captive portal or proxy answered instead of the server \
            (nothing written, the partial kept), 77 a file there is not yours, 130/143 paused by a signal, \
            60 a TLS certificate failure (untrusted, expired, wrong host, client certificate), \
            66 a --cacert/--capath/--cert/--key file cannot be used. \
            Proxies: https_proxy, http_proxy, all_proxy and no_proxy as curl reads them, or --proxy / --no-proxy.
            """
    )

    @Argument(
        help:
            "The http:// or https:// URL (a presigned query is kept intact and redacted in output); several URLs are mirrors of one file (docs/mirrors.md)."
    )
    var urls: [String] = []

    /// The first URL: the download's own when it has one source.
    var url: String { urls.first ?? sources.metalink ?? "" }

    @Option(name: [.customShort("o"), .long], help: "The output file (default: the last part of the URL path).")
    var output: String?

    @Option(help: "Parallel ranged requests (default: 1 below 8 MiB, otherwise up to 4).")
    var segments: Int?

    @Option(help: "The expected sha256 (hex); the download fails when it differs.")
    var sha256: String?

    @Flag(
        help:
            "Compute the file's sha256 and print it (`sha256sum` format; in --json, the sha256 field). Without it or --sha256 no whole-file hash is computed."
    )
    var printSha256 = false

    @Flag(
        help:
            "Give way to other traffic: the receive window follows the queuing delay the download causes (receiver-side LEDBAT; docs/background.md)."
    )
    var background = false

    @Option(
        help: ArgumentHelp(
            "The queuing delay --background aims at, in milliseconds (default 5).", valueName: "ms",
            visibility: .hidden))
    var backgroundTarget: Int?

    @OptionGroup(title: "Deltas")
    var delta: DeltaOptions

    @OptionGroup(title: "Mirrors and Metalink")
    var sources: MirrorOptions

    @Option(help: "A rate limit, e.g. 2MiB or 512KiB/s.")
    var rate: String?

    @Flag(help: "Overwrite an existing output file.")
    var force = false

    @Flag(help: "One JSON event per line on stdout; the last line has the final state, sha256 and bytes fetched.")
    var json = false

    @Flag(help: "Resume even when the server gives no validator (no strong ETag, no Last-Modified).")
    var resumeUnvalidated = false

    @Option(help: "A separate HEAD URL (presigned URLs are signed per method); never required.")
    var headURL: String?

    @Option(
        help:
            "The largest object to accept, e.g. 2GiB: a bigger one (or a body without a length that grows past it) fails."
    )
    var maxSize: String?

    @Option(help: "Abandon and retry a response slower than this many bytes per second over --speed-time (0: off).")
    var speedLimit: String = "1KiB"

    @Option(help: "The window of --speed-limit, in seconds.")
    var speedTime: Int = 60

    @Option(
        help:
            "Retries of a range that makes no progress (refused, reset, 5xx) before giving up; back-off from 250 ms to 30 s."
    )
    var retries: Int = 8

    @Option(help: ArgumentHelp("Checkpoint after this many bytes per segment (default 4MiB).", visibility: .hidden))
    var checkpointEvery: String?

    @OptionGroup(title: "TLS and proxies")
    var connection: ConnectionOptions

    func validate() throws {
        if let segments, !(1...16).contains(segments) { throw ValidationError("--segments must be between 1 and 16.") }
        if let backgroundTarget, !(1...1000).contains(backgroundTarget) {
            throw ValidationError("--background-target must be between 1 and 1000 (milliseconds).")
        }
        if let sha256, ExpectedSHA256.parse(sha256) == nil {
            throw ValidationError("--sha256: \(ExpectedSHA256.hint).")
        }
        if let rate, Units.parseRateLimit(rate) == nil {
            throw ValidationError("--rate \(rate) is not a rate; \(Units.rateHint) (the /s may be left out).")
        }
        if let maxSize, Units.parseBytes(maxSize) == nil {
            throw ValidationError("--max-size \(maxSize) is not a size; \(Units.bytesHint).")
        }
        if Units.parseBytes(speedLimit) == nil {
            throw ValidationError("--speed-limit \(speedLimit) is not a size; \(Units.bytesHint).")
        }
        guard (1...86_400).contains(speedTime) else {
            throw ValidationError("--speed-time must be from 1 to 86400 seconds.")
        }
        guard (0...1000).contains(retries) else { throw ValidationError("--retries must be from 0 to 1000.") }
        if let checkpointEvery, (Units.parseBytes(checkpointEvery) ?? 0) <= 0 {
            throw ValidationError("--checkpoint-every \(checkpointEvery) is not a size; \(Units.bytesHint).")
        }
        if urls.isEmpty, sources.metalink == nil {
            throw ValidationError("Give the URL to download (or --metalink FILE).")
        }
        if delta.isDelta, urls.count + sources.mirrors.count > 1 || sources.metalink != nil {
            throw ValidationError("--zsync takes one URL; mirrors and Metalink files are for whole downloads.")
        }
        if output == nil, sources.metalink == nil || sources.metalinkIsRemote,
            (urls.first.flatMap(OutputName.from(url:)) ?? sources.metalinkURLName) == nil
        {
            throw ValidationError("The URL has no file name to save to; give one with -o FILE.")
        }
    }

    func run() async throws {
        ProcessMemory.releaseStartupPages()
        var request = DownloadRequest(url: url, destination: output ?? OutputName.from(url: url) ?? "")
        request.followMetalink = !sources.noFollowMetalink
        request.nameFromMetalink = output == nil
        do throws(TransferError) {
            if let (set, name) = try sources.mirrorSet(urls: urls) {
                request.mirrors = set
                request.url = set.sources.first?.url ?? sources.metalink ?? url
                if output == nil {
                    guard let name = name ?? urls.first.flatMap(OutputName.from(url:)) else {
                        throw TransferError(.metalink, "The Metalink file names no file; give one with -o FILE.")
                    }
                    request.destination = name
                }
            }
        } catch {
            if json {
                _ = ProgressPrinter(mode: .json, url: RedactedURL.redact(url), destination: request.destination)
                    .print(.failed(error))
            } else {
                FileHandle.standardError.write(Data("meterwise get: \(ShownText.escaped(error.message))\n".utf8))
            }
            throw ExitCode(Self.exitCode(for: error.code))
        }
        request.headURL = headURL
        request.segments = segments
        request.expectedSHA256 = sha256.flatMap(ExpectedSHA256.parse)
        request.computeSHA256 = printSha256
        request.force = force
        request.resumeUnvalidated = resumeUnvalidated
        request.rateLimit = rate.flatMap(Units.parseRateLimit)
        if let every = checkpointEvery.flatMap(Units.parseBytes) { request.checkpointEveryBytes = every }
        request.maxSize = maxSize.flatMap(Units.parseBytes)
        request.lowSpeedLimit = Units.parseBytes(speedLimit) ?? 1024
        request.lowSpeedTime = .seconds(speedTime)
        request.maxRetries = retries
        if delta.isDelta { request.delta = DeltaSource(control: delta.zsyncURL, seeds: delta.seeds) }
        let shownURL = RedactedURL.redact(url)
        do throws(TransferError) {
            request.tls = try connection.tls()
            request.proxy = try connection.proxySettings()
            request.http2 = connection.http2
            request.background = background
            if let backgroundTarget { request.backgroundTarget = .milliseconds(backgroundTarget) }
        } catch {
            if json {
                _ = ProgressPrinter(mode: .json, url: shownURL, destination: request.destination).print(.failed(error))
            } else {
                FileHandle.standardError.write(Data("meterwise get: \(ShownText.escaped(error.message))\n".utf8))
            }
            throw ExitCode(Self.exitCode(for: error.code))
        }
        var logger = Logger(label: "meterwise.get")
        // The printer reports progress, so info logs would repeat it: warnings unless METERWISE_LOG asks for
        // more (the failure text points there for the details).
        logger.logLevel =
            ProcessInfo.processInfo.environment["METERWISE_LOG"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
        let download = Download(request: request, logger: logger)
        // Each source takes the proxy its own URL gets: one choice is named, several are listed per source.
        let choices = (request.mirrors?.sources.map(\.url) ?? [url]).map { request.proxy.server(for: $0) }
        let printer = ProgressPrinter(
            mode: json ? .json : (isatty(STDERR_FILENO) == 1 ? .tty : .plain),
            url: shownURL, destination: request.destination, proxy: request.proxy.server(for: url)?.description,
            proxiesDiffer: Set(choices).count > 1
        )
        let signals = SignalStream(signals: [SIGINT, SIGTERM])
        defer { signals.stop() }
        let signalNumbers = signals.stream

        enum Ending: Sendable {
            case outcome(Result<DownloadOutcome, TransferError>)
            case signal(Int32)
            case rendered
        }
        var outcome: Result<DownloadOutcome, TransferError>?
        let received = ReceivedSignal()
        await withTaskGroup(of: Ending.self) { group in
            group.addTask {
                do throws(TransferError) {
                    return .outcome(.success(try await download.run()))
                } catch {
                    return .outcome(.failure(error))
                }
            }
            group.addTask {
                for await event in download.events {
                    if printer.print(event) { break }
                }
                return .rendered
            }
            group.addTask {
                for await number in signalNumbers {
                    received.number.withLock { $0 = number }
                    // Recorded first: a signal in the first milliseconds, before `run()` has begun, pauses it as
                    // soon as it begins (`pause()` alone does nothing to a download not yet running).
                    download.requestStop(cancel: false)
                    await download.pause()
                    return .signal(number)
                }
                return .rendered
            }
            var pending = 2
            while pending > 0, let ending = await group.next() {
                switch ending {
                case .outcome(let result):
                    outcome = result
                    pending -= 1
                case .rendered:
                    pending -= 1
                case .signal:
                    break
                }
            }
            group.cancelAll()
        }
        signals.stop()
        switch outcome {
        case .success(.completed(let result))?:
            if !json {
                // `sha256sum` format when a hash was computed; otherwise just the path.
                printer.line(result.sha256.map { "\($0)  \(result.path)" } ?? result.path, toStdout: true)
            }
        case .success(.paused)?:
            let code: Int32 = received.number.withLock { $0 } == SIGTERM ? 143 : 130
            if !json {
                printer.line(
                    printer.pausedBytes == 0
                        ? "Paused before anything was received; run the same command again to start."
                        : "Paused; the checkpoint is saved. Run the same command again to resume.")
            }
            throw ExitCode(code)
        case .success(.cancelled)?:
            throw ExitCode(1)
        case .failure(let error)?:
            if !json { printer.line("meterwise get: \(error.message)") }
            throw ExitCode(Self.exitCode(for: error.code))
        case nil:
            throw ExitCode(1)
        }
    }

    /// The exit code for a failure (docs/get.md).
    static func exitCode(for code: TransferError.Code) -> Int32 {
        switch code {
        case .checksumMismatch, .lengthMismatch, .controlFile, .metalink: return 65
        case .destinationExists: return 73
        case .fileSystem: return 74
        case .invalidURL: return 64
        case .httpStatus, .retriesExhausted, .objectUnstable, .tooManyRedirects, .insecureRedirect, .protocolViolation,
            .noSources, .linkNotAllowed:
            return 69
        case .alreadyRunning, .cancelled: return 1
        case .permission: return 77
        case .outputBusy: return 75
        case .tooLarge: return 74
        case .tls: return 60
        case .tlsSetup: return 66
        case .proxy: return 69
        case .intercepted: return 76
        }
    }
}

/// The signal that paused the download (the exit code depends on it).
final class ReceivedSignal: Sendable {
    let number = Mutex<Int32?>(nil)
}
