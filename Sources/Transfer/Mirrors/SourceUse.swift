/// What the caller of a download with several sources says of one of them (`DownloadRequest.judgeSource`):
/// the engine's view of the link a source is reached over and of the policy's `prefer:` (docs/mirrors.md,
/// "Links and preferences").
public enum SourceUse: Sendable, Equatable {
    /// Used as any source is.
    case use
    /// Used only while no source that is `use` is left: the reason says why it stands by.
    case standby(String)
    /// Not used: the reason says why (a link the policy does not let the job use).
    case refuse(String)
}
