import Foundation
import Policy

/// Loads a policy on a thread of its own. Reading and parsing files is blocking I/O and CPU work of
/// unbounded size as far as the caller knows; on the cooperative pool it would hold one of its few
/// threads (two on a 2-core machine) from the engine and the control API for as long as it takes.
enum PolicyLoadThread {
    static func load(_ source: PolicySource) async throws(PolicyError) -> PolicySet {
        let result: Result<PolicySet, PolicyError> = await withCheckedContinuation { continuation in
            let thread = Thread {
                continuation.resume(returning: Result { () throws(PolicyError) in try source.load() })
            }
            thread.name = "meterwise-policy-load"
            thread.start()
        }
        return try result.get()
    }
}
