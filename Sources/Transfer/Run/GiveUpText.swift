/// What a download that gives up says about what it keeps (pure): only what is true of the files on disk.
public enum GiveUpText {
    /// After `retries` retries of a range without progress, the last failing for `reason`. With bytes
    /// on disk, the checkpoint holds them; with none, there is nothing to resume, only to try again.
    public static func retriesExhausted(retries: Int, reason: String, bytesDone: Int64) -> String {
        let tries = retries == 1 ? "1 retry" : "\(retries) retries"
        // A reason that is a whole sentence already (a server's own text) gets no second period.
        let reason = reason.last == "." ? String(reason.dropLast()) : reason
        if bytesDone > 0 {
            return
                "Gave up after \(tries): \(reason). The checkpoint is saved (\(bytesDone) bytes); run the same command again to resume."
        }
        return
            "Gave up after \(tries): \(reason). Nothing was received, so there is nothing to resume; run the same command again to try again."
    }

    /// After `restarts` restarts from 0 for `reason`. Restarts for `.unvalidated` happen when a transfer
    /// failed part-way (`failure`, e.g. below the low-speed limit) against a server without validators: the
    /// object did not change; what was fetched cannot be proven to be the same object, so it is fetched
    /// again. Other reasons mean the server's object changed.
    public static func restartsExhausted(restarts: Int, reason: RestartReason, failure: String?) -> String {
        switch reason {
        case .unvalidated:
            let failed =
                failure.map { "each transfer failed part-way (the last: \($0))" } ?? "each transfer failed part-way"
            return
                "Gave up after \(restarts) restarts from 0: \(failed), and the server gives no validator (strong ETag or Last-Modified), so the partial data cannot be kept. Fix what failed (a slow server: lower --speed-limit or raise --speed-time), or pass --resume-unvalidated to keep the partial data."
        default:
            return "Gave up after \(restarts) restarts: \(reason.rawValue). The object keeps changing; try again later."
        }
    }
}
