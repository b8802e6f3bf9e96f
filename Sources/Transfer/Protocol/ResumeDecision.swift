/// What to do with what is on disk when a download starts.
public enum ResumeAction: Sendable, Equatable {
    /// Nothing usable: start from 0.
    case fresh
    /// Verify the checkpoint's pieces against the partial file and continue.
    case resume(Checkpoint)
    /// There is a checkpoint but it must not be used: say why and start from 0.
    case discard(RestartReason)
}

/// Decides whether a checkpoint can be resumed: pure.
public enum ResumeDecision {
    /// - Parameters:
    ///   - checkpoint: the decoded checkpoint, nil when there is none.
    ///   - unreadable: a checkpoint file exists but does not decode.
    ///   - url: the request's URL: a checkpoint for another URL (its credentials and query aside: presigned signatures
    ///     change) is not resumed.
    ///   - destination: the request's final path, absolute (`Checkpoint.isFor(destination:)`).
    ///   - resumeUnvalidated: the user's `--resume-unvalidated`.
    public static func decide(
        checkpoint: Checkpoint?, unreadable: Bool, url: String, destination: String, resumeUnvalidated: Bool
    ) -> ResumeAction {
        if unreadable { return .discard(.damagedCheckpoint) }
        guard let cp = checkpoint else { return .fresh }
        // Every number is bounded before any arithmetic: a checkpoint is a file anyone may have edited.
        guard cp.format == Checkpoint.formatName, Checkpoint.readableVersions.contains(cp.version),
            (ObjectLimits.minChunk...ObjectLimits.maxChunk).contains(cp.chunkSize), cp.isFor(destination: destination),
            let total = cp.totalBytes, (0...ObjectLimits.maxBytes).contains(total),
            cp.pieces.count <= min((total / cp.chunkSize + 1) * ObjectLimits.piecesPerChunk, ObjectLimits.maxPieces)
        else { return .discard(.damagedCheckpoint) }
        // Each piece carries exactly one well-formed checksum (a CRC-32C, or a version 1 sha256).
        if cp.pieces.contains(where: {
            $0.offset < 0 || $0.offset > total || $0.length <= 0 || $0.length > total - $0.offset
                || PieceChecksum($0) == nil
        }) {
            return .discard(.damagedCheckpoint)
        }
        if RedactedURL.resumeKey(cp.url) != RedactedURL.resumeKey(url) { return .discard(.otherURL) }
        if cp.pieces.isEmpty { return .fresh }
        guard cp.acceptRanges else { return .discard(.rangeIgnored) }
        // A server whose ETag changes for the same bytes may leave no validator: the run proves the content
        // again from samples before it trusts the partial (`ContentCheck`).
        if cp.validators.isEmpty && !resumeUnvalidated && cp.unstableETag != true { return .discard(.unvalidated) }
        return .resume(cp)
    }
}
