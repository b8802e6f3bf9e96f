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

/// Reloads the policy on SIGHUP or when its files change. A policy with errors (including a file too
/// large, not UTF-8, or whose aliases expand too much) is not applied: the old one stays and every error
/// is logged with its `file:line:column`.
public struct PolicyReloadService<C: Clock>: Service where C.Duration == Duration, C.Instant: Sendable {
    public let engine: Engine<C>
    /// Where the policy comes from; the built-in default has no file to watch, SIGHUP still reloads.
    public let source: PolicySource
    public let logger: Logger

    public init(engine: Engine<C>, source: PolicySource, logger: Logger) {
        self.engine = engine
        self.source = source
        self.logger = logger
    }

    public func run() async throws {
        let signals = await UnixSignalsSequence(trapping: .sighup)
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
        do {
            let policy = try await PolicyLoadThread.load(source)
            await engine.reload(policy: policy)
            logger.info("policy reloaded (\(reason)) from \(source): \(policy.files.joined(separator: ", "))")
        } catch {
            logger.error("policy not reloaded (\(reason)); keeping the previous one:\n\(error)")
        }
    }
}
