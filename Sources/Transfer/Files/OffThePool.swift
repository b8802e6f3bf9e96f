import Dispatch

/// Runs long blocking file work (reading back a large partial file) on a dispatch thread, not on Swift's
/// cooperative pool: that pool has one thread per CPU, and on a one-CPU machine a check that held it kept the
/// task that turns SIGTERM into a pause from running until the check was over (10–23 s on a 16 GiB partial).
enum OffThePool {
    static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { c in
            DispatchQueue.global(qos: .utility).async { c.resume(returning: body()) }
        }
    }
}
