/// How many unfinished jobs (queued, waiting, running, paused) one user may hold in the daemon: each costs
/// memory and store space for as long as it is unfinished. Root and the daemon's own user are not counted
/// against it. Pure.
public struct JobQuota: Sendable, Hashable {
    /// The most unfinished jobs per user; nil: no limit.
    public var perUser: Int?

    /// The daemon's default (`daemon --max-queued-per-user`).
    public static let defaultPerUser = 1000

    public init(perUser: Int? = JobQuota.defaultPerUser) {
        self.perUser = perUser
    }

    /// Nil when `asker`, holding `unfinished` jobs, may add one more; otherwise what to tell them.
    public func refusal(asker: Asker, unfinished: Int) -> String? {
        guard let perUser, !asker.seesEveryJob, unfinished >= perUser else { return nil }
        return "uid \(asker.uid) has \(unfinished) unfinished jobs, the daemon's limit per user (\(perUser)): "
            + "wait for some to finish or cancel some (`meterwise list`, `meterwise cancel ID`); "
            + "root can raise it with `meterwise daemon --max-queued-per-user N`"
    }
}
