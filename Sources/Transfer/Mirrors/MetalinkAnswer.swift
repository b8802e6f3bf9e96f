/// A server answered a download's first request with a Metalink file (a mirror system's redirector): carried as
/// the cause of the error that ends the single-source run, so the download goes on from the file's sources.
struct MetalinkAnswer: Error, Sendable {
    /// Where the Metalink file came from (after redirects).
    var url: String

    /// Whether a `Content-Type` names a Metalink file (RFC 5854's `application/metalink4+xml`, or Metalink 3's
    /// `application/metalink+xml`), parameters aside.
    static func isMetalink(contentType: String?) -> Bool {
        guard let contentType else { return false }
        let type = contentType.split(separator: ";", maxSplits: 1).first.map { $0.lowercased() } ?? ""
        let bare = type.filter { $0 != " " && $0 != "\t" }
        return bare == "application/metalink4+xml" || bare == "application/metalink+xml"
    }
}

/// A server answered a new download's first request naming other places of the file (`Announced`): carried as
/// the cause of the error that ends the single-source run, so the download goes on from all of them.
struct MirrorsAnswer: Error, Sendable {
    /// The other places, most preferred first (none: a download from several sources left part-way under this
    /// name goes on as one).
    var mirrors: [SourceHeaders.Duplicate]
    /// The file's digests the answers on the way gave: they decide which sources have the file.
    var digests: [Metalink.HashKind: [UInt8]]
}
