import ArgumentParser
import ConfigKit
import Engine
import Foundation
import Links
import Logging
import MeterwiseClient
import Policy
import ServiceLifecycle
import Transfer
import UnixSignals

/// `meterwise daemon`: the engine, the job store and the control API, until SIGTERM.
struct DaemonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daemon",
        abstract: "Run the download engine with its job store and control socket.",
        discussion: """
            SIGTERM or SIGINT pauses every transfer with its checkpoint flushed and exits; SIGHUP, or a \
            change to a policy file, reloads the policy (a policy with errors is logged and not applied). \
            The control API is HTTP + JSON on a Unix socket (docs/api.md).
            """
    )

    @Option(help: ArgumentHelp(PolicyOption.help))
    var policy: String?

    @Flag(
        help: ArgumentHelp(
            "Run as your own daemon (systemctl --user): XDG paths even as root.",
            discussion:
                "Policy from $XDG_CONFIG_HOME/meterwise/policies.d (then /etc/meterwise/policies.d, then the built-in one), jobs in $XDG_STATE_HOME/meterwise, socket $XDG_RUNTIME_DIR/meterwise.sock. Clients try this socket before the system's."
        ))
    var user = false

    @Option(
        help:
            "State directory for the job store (default: /var/lib/meterwise as root, $XDG_STATE_HOME/meterwise otherwise or with --user)."
    )
    var state: String?

    @Option(
        help:
            "Control socket path (default: $METERWISE_SOCKET, else /run/meterwise/meterwise.sock as root, $XDG_RUNTIME_DIR/meterwise.sock otherwise or with --user)."
    )
    var socket: String?

    @Option(help: "Make the socket 0660 and owned by this group.")
    var group: String?

    @OptionGroup(title: "Links")
    var linkSource: LinkSourceOptions

    @Option(help: "How many transfers run at once.")
    var maxActive: Int = 3

    @Option(
        help: ArgumentHelp(
            "How many unfinished jobs each user of the socket may hold; 0: no limit.",
            discussion:
                "Root and the daemon's own user are not limited. One more job is refused with 429 quota (docs/api.md).",
            valueName: "n"))
    var maxQueuedPerUser: Int = JobQuota.defaultPerUser

    @Option(
        help:
            "Delete finished jobs (completed, failed, cancelled) this long after they last changed, e.g. 7d or 12h; 0 keeps them."
    )
    var retention: String = "7d"

    @Option(
        help: ArgumentHelp(
            "CA certificates (PEM) trusted for every job besides the system's store; a job's ca_file replaces both.",
            discussion:
                "Read once at start. Proxies come from the environment (https_proxy, http_proxy, all_proxy, no_proxy; systemd's Environment=) or per job (docs/api.md).",
            valueName: "file"))
    var caFile: String?

    @Option(
        help: ArgumentHelp(
            "Serve the Prometheus metrics on GET /metrics at this TCP address.",
            discussion:
                "PORT listens on loopback (127.0.0.1); HOST:PORT or [IPv6]:PORT elsewhere, e.g. 0.0.0.0:9464 for a fleet's Prometheus. Only /metrics is served there (docs/metrics.md).",
            valueName: "addr"))
    var metricsListen: String?

    @Option(
        help: ArgumentHelp(
            "Write the Prometheus metrics to this *.prom file for node_exporter's textfile collector.",
            discussion: "Replaced atomically after activity, at most every 15 s, and on shutdown (docs/metrics.md).",
            valueName: "path"))
    var metricsTextfile: String?

    @Option(
        help: ArgumentHelp(
            "How often an event stream carries a keepalive event, e.g. 15s or 500ms.",
            discussion:
                "Clients of GET /v1/events take a stream with no line for three intervals as a lost daemon (docs/api.md).",
            valueName: "duration"))
    var keepalive: String = "15s"

    /// `--keepalive` as a duration; nil when it is not one from 100 ms to 1 h.
    var keepaliveInterval: Duration? {
        guard let interval = Units.parseDuration(keepalive), interval >= .milliseconds(100), interval <= .seconds(3600)
        else { return nil }
        return interval
    }

    /// The exit status when link monitoring failed for good (EX_UNAVAILABLE): non-zero, so that systemd's
    /// `Restart=on-failure` starts the daemon again.
    static let linkMonitorExitStatus: Int32 = 69

    /// `--retention` as a duration; `.some(nil)` keeps finished jobs, nil is not a duration.
    var retentionPeriod: Duration?? {
        if retention == "0" { return .some(nil) }
        guard let period = Units.parseDuration(retention), period > .zero, period <= .seconds(3650 * 86_400) else {
            return nil
        }
        return .some(period)
    }

    func validate() throws {
        if user && group != nil {
            throw ValidationError(
                "--group is for the system daemon: a --user daemon serves you alone (drop --group, or --user)")
        }
        guard maxActive >= 1 else { throw ValidationError("--max-active must be at least 1") }
        guard (0...10_000_000).contains(maxQueuedPerUser) else {
            throw ValidationError("--max-queued-per-user must be from 0 (no limit) to 10000000")
        }
        guard retentionPeriod != nil else {
            throw ValidationError(
                "--retention \(retention) is not a duration: use e.g. 7d, 12h, 30m, or 0 to keep finished jobs.")
        }
        guard keepaliveInterval != nil else {
            throw ValidationError("--keepalive \(keepalive) is not a duration from 100ms to 1h: use e.g. 15s")
        }
        if let metricsListen {
            do { _ = try MetricsListener<ScaledClock>.Address(parsing: metricsListen) } catch {
                throw ValidationError(error.message)
            }
        }
        if let metricsTextfile, let problem = MetricsTextfile<ScaledClock>.problem(with: metricsTextfile) {
            throw ValidationError(problem)
        }
    }

    func run() async throws {
        var logger = Logger(label: "meterwise.daemon")
        if ProcessInfo.processInfo.environment["METERWISE_LOG"] == nil { logger.logLevel = .info }
        let scope: StatePaths.Scope = user ? .user : StatePaths.defaultScope
        let policySource = PolicyLocator.current(explicit: policy, asUser: user)
        let policySet = try PolicyOption.load(policySource)
        let stateDirectory = state ?? StatePaths.stateDirectory(scope)
        // Absolute, so the socket's directory is known and clients given the same relative path still work.
        let defaultSocket = StatePaths.explicitSocket ?? StatePaths.socket(scope)
        let socketPath = URL(fileURLWithPath: socket ?? defaultSocket).standardizedFileURL.path
        let links = try linkSource.source()
        let clock = links.clock()
        let monitor = links.monitor(clock: clock, logger: logger)
        // One daemon per state directory: a second one stops here, before it touches the socket or the store.
        let stateLock = try StateLock.acquire(stateDirectory)
        let caBundle: CABundle
        let proxy: ProxySettings
        do throws(TransferError) {
            caBundle = try caFile.map(CABundle.load) ?? .none
            proxy = try ProxySettings.environment(ProcessInfo.processInfo.environment)
        } catch {
            throw ValidationError(error.message)
        }
        let store = try JobStore(path: stateDirectory + "/jobs.sqlite")
        var engineLogger = Logger(label: "meterwise.engine")
        engineLogger.logLevel = logger.logLevel
        let engine = try Engine(
            policy: policySet, store: store, monitor: monitor, clock: clock,
            configuration: {
                var c = EngineConfiguration(maxActive: maxActive, canBind: links.isKernel)
                // Simulated links carry their bytes over the machine's real interfaces.
                c.receivedBytes = links.isKernel ? .perLink : .wholeMachine
                c.retention = retentionPeriod ?? nil
                c.caBundle = caBundle
                c.proxy = proxy
                c.quota = JobQuota(perUser: maxQueuedPerUser == 0 ? nil : maxQueuedPerUser)
                return c
            }(), logger: engineLogger)
        logger.info(
            "meterwise \(Meterwise.version) daemon: state \(stateDirectory), socket \(socketPath), policy \(policySource)"
        )
        // The start-up's pages (argument parsing, the store's migrations, the first policy load) are not the
        // daemon's working set: a long-running process should not keep them resident.
        ProcessMemory.releaseStartupPages()
        // SIGHUP is trapped before any service runs, so READY=1 (sent once the first snapshot is in) never
        // comes before the daemon can reload: a SIGHUP from then on is held until the reload service reads it.
        let sighup = await UnixSignalsSequence(trapping: .sighup)
        let notifier = SystemdNotifier()
        var services: [any Service] = [
            EngineService(engine: engine),
            ControlService(
                server: ControlServer(
                    path: socketPath, group: self.group, engine: engine,
                    keepalive: keepaliveInterval ?? ControlServer<ScaledClock>.defaultKeepalive)),
            PolicyReloadService(
                engine: engine, source: policySource, logger: logger, notifier: notifier, sighup: sighup),
            NotifyService(engine: engine, notifier: notifier),
        ]
        if let metricsListen {
            let address = try MetricsListener<ScaledClock>.Address(parsing: metricsListen)
            services.append(
                MetricsListenService(listener: MetricsListener(address: address, engine: engine, logger: logger)))
        }
        if let metricsTextfile {
            services.append(
                MetricsTextfileService(textfile: MetricsTextfile(path: metricsTextfile, engine: engine, logger: logger))
            )
        }
        let group = ServiceGroup(
            services: services,
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger)
        do {
            try await group.run()
        } catch let error as EngineError where error.code == .linkMonitor {
            // Nothing deep in the stack exits: the engine stopped (checkpoints flushed), the exit is here.
            withExtendedLifetime(stateLock) {}
            logger.critical("exiting with status \(Self.linkMonitorExitStatus) for a restart: \(error)")
            throw ExitCode(Self.linkMonitorExitStatus)
        }
        withExtendedLifetime(stateLock) {}
        logger.info("stopped; checkpoints flushed")
    }
}
