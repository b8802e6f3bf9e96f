/// The `defaults:` section: settings that later files override key by key.
public struct PolicyDefaults: Sendable, Hashable {
    /// Hysteresis: how long the answer must have been `run` before a job that a pause stopped resumes.
    public var resumeAfter: Duration = .seconds(5)
    /// The action when no rule matches. It never uses a metered link: on a metered primary it pauses.
    public var action: Action = .run
    /// Bytes per second when the default action is `throttle`.
    public var rate: Int64?
    /// How much of a job's filesystem stays free (`SpaceGate`); nil: no limit beyond the disk's size.
    public var keepFree: KeepFree?
    /// `mode:` for jobs no rule gives one (nil: background, docs/background.md).
    public var mode: TransferMode?

    public init(resumeAfter: Duration = .seconds(5), action: Action = .run, rate: Int64? = nil) {
        self.resumeAfter = resumeAfter
        self.action = action
        self.rate = rate
    }
}
