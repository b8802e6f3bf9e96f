import Foundation
import Logging
import Policy
import ServiceLifecycle
import UnixSignals

/// The engine as a service: runs until graceful shutdown, then pauses every transfer with its
/// checkpoint flushed and saves the store before returning.
public struct EngineService<C: Clock>: Service where C.Duration == Duration, C.Instant: Sendable {
    public let engine: Engine<C>

    public init(engine: Engine<C>) {
        self.engine = engine
    }

    public func run() async throws {
        let engine = self.engine
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await engine.run() }
            group.addTask {
                try? await gracefulShutdown()
                await engine.shutdown()
            }
            try await group.next()
            group.cancelAll()
        }
    }
}

/// The control API as a service.
public struct ControlService<C: Clock>: Service where C.Duration == Duration, C.Instant: Sendable {
    public let server: ControlServer<C>

    public init(server: ControlServer<C>) {
        self.server = server
    }

    public func run() async throws {
        let channel = try await server.bind()
        do {
            try await cancelWhenGracefulShutdown {
                try await server.serve(channel)
            }
        } catch is CancellationError {
            // Graceful shutdown: the socket is closed and removed.
        }
    }
}

/// `--metrics-listen` as a service.
public struct MetricsListenService<C: Clock>: Service where C.Duration == Duration, C.Instant: Sendable {
    public let listener: MetricsListener<C>

    public init(listener: MetricsListener<C>) {
        self.listener = listener
    }

    public func run() async throws {
        let channel = try await listener.bind()
        do {
            try await cancelWhenGracefulShutdown {
                try await listener.serve(channel)
            }
        } catch is CancellationError {
            // Graceful shutdown: the port is closed.
        }
    }
}

/// `--metrics-textfile` as a service: the last write happens on shutdown.
public struct MetricsTextfileService<C: Clock>: Service where C.Duration == Duration, C.Instant: Sendable {
    public let textfile: MetricsTextfile<C>

    public init(textfile: MetricsTextfile<C>) {
        self.textfile = textfile
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await textfile.run()
        }
    }
}

/// Reloads the policy on SIGHUP or when its files change. A policy with errors (including a file too
/// large, not UTF-8, or whose aliases expand too much) is not applied: the old one stays and every error
/// is logged with its `file:line:column`.
public struct PolicyReloadService<C: Clock>: Service where C.Duration == Duration, C.Instant: Sendable {
    public let engine: Engine<C>
    /// Where the policy comes from; the built-in default has no file to watch, SIGHUP still reloads.
    public let source: PolicySource
    public let logger: Logger
    /// Told `RELOADING=1` and then `READY=1` around each reload.
    public let notifier: SystemdNotifier

    /// SIGHUP trapped by the caller before the services start (a daemon must not say READY before it can
    /// reload); nil: trapped when this service runs.
    let sighup: UnixSignalsSequence?

    public init(
        engine: Engine<C>, source: PolicySource, logger: Logger,
        notifier: SystemdNotifier = SystemdNotifier(environment: [:]),
        sighup: UnixSignalsSequence? = nil
    ) {
        self.engine = engine
        self.source = source
        self.logger = logger
        self.notifier = notifier
        self.sighup = sighup
    }

    public func run() async throws {
        let signals: UnixSignalsSequence
        if let sighup { signals = sighup } else { signals = await UnixSignalsSequence(trapping: .sighup) }
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { for await _ in signals { await reload(because: "SIGHUP") } }
                if let path = source.path {
                    group.addTask {
                        for await _ in PolicyWatcher(path: path).changes() {
                            await reload(because: "a policy file changed")
                        }
                    }
                }
                await group.waitForAll()
            }
        }
    }

    /// Parses on `PolicyLoadThread`, off the engine's executor and the shared pool; the engine sees only a
    /// policy that loaded whole.
    func reload(because reason: String) async {
        notifier.send(
            "RELOADING=1\nMONOTONIC_USEC=\(SystemdNotifier.monotonicMicroseconds)\nSTATUS=reloading the policy (\(reason))"
        )
        do {
            let policy = try await PolicyLoadThread.load(source)
            await engine.reload(policy: policy)
            logger.info("policy reloaded (\(reason)) from \(source): \(policy.files.joined(separator: ", "))")
        } catch {
            logger.error("policy not reloaded (\(reason)); keeping the previous one:\n\(error)")
        }
        notifier.send("READY=1\nSTATUS=\(await engine.statusLine())")
    }
}

/// Tells systemd how the daemon is (`Type=notify`): `READY=1` once the first link snapshot is in (the
/// store is open before the engine exists), `STATUS=` with a one-line summary as links and jobs change,
/// `WATCHDOG=1` at half of `WATCHDOG_USEC` when systemd asks for it, `STOPPING=1` on shutdown. Without
/// `$NOTIFY_SOCKET` it does nothing and wakes nobody.
public struct NotifyService<C: Clock>: Service where C.Duration == Duration, C.Instant: Sendable {
    public let engine: Engine<C>
    public let notifier: SystemdNotifier
    /// Subscribed when the service is made, before any service runs: services start concurrently, and the
    /// first snapshot's event must not be published before this one listens (then nothing else might come
    /// to say READY). Nil without `$NOTIFY_SOCKET`.
    let events: AsyncStream<EngineEvent>?

    public init(engine: Engine<C>, notifier: SystemdNotifier) {
        self.engine = engine
        self.notifier = notifier
        events = notifier.socketPath != nil ? engine.events.subscribe() : nil
    }

    public func run() async throws {
        guard let events else {
            // A service that returns ends the group: wait for the shutdown like the others.
            try? await gracefulShutdown()
            return
        }
        let notifier = self.notifier
        let engine = self.engine
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    var ready = false
                    var last = ""
                    for await event in events {
                        switch event {
                        case .links, .started, .paused, .waiting, .completed, .failed, .cancelled, .added:
                            let status = await engine.statusLine()
                            if !ready {
                                ready = true
                                notifier.send("READY=1\nSTATUS=\(status)")
                            } else if status != last {
                                notifier.send("STATUS=\(status)")
                            }
                            last = status
                        case .decision where !ready:
                            // Decisions come only once the first snapshot is in. With a long queue restored,
                            // the first pass's decision events can push `.links` out of this stream's buffer
                            // (the newest 1024 are kept): any of them says READY then.
                            last = await engine.statusLine()
                            ready = true
                            notifier.send("READY=1\nSTATUS=\(last)")
                        default:
                            break
                        }
                    }
                }
                if let interval = notifier.watchdogInterval {
                    group.addTask {
                        while !Task.isCancelled {
                            notifier.send("WATCHDOG=1")
                            try? await Task.sleep(for: interval)
                        }
                    }
                }
                await group.waitForAll()
            }
        }
        notifier.send("STOPPING=1\nSTATUS=stopping: pausing every transfer with its checkpoint flushed")
    }
}
