import NIOHTTP1

/// What the responses on the way to an answer announced about the file (RFC 6249): mirrors in
/// `Link: rel=duplicate` and digests in `Digest` / `Repr-Digest`. A mirror system's redirector sends them
/// on its 302, so every response on the way counts, not only the last; a digest on the answer itself wins
/// over one on a redirect before it.
struct Announced: Sendable, Equatable {
    private(set) var duplicates: [SourceHeaders.Duplicate] = []
    private(set) var digests: [Metalink.HashKind: [UInt8]] = [:]

    /// Reads one response's headers; `url` is the URL it answered, which relative links resolve against.
    mutating func read(_ headers: HTTPHeaders, from url: String) {
        let links = headers["Link"]
        if !links.isEmpty {
            for d in SourceHeaders.duplicates(linkValues: links, base: url)
            where duplicates.count < SourceHeaders.maxDuplicates && !duplicates.contains(where: { $0.url == d.url }) {
                duplicates.append(d)
            }
            duplicates = Metalink.sortedByPriority(duplicates, \.priority)
        }
        let digest = headers["Digest"]
        let repr = headers["Repr-Digest"]
        if !digest.isEmpty || !repr.isEmpty {
            digests.merge(SourceHeaders.digests(digestValues: digest, reprDigestValues: repr)) { _, later in later }
        }
    }

    /// The announced mirrors a download that `answered` at `url` (after redirects from `origin`) may add: not
    /// those two, each a URL a download may use, and never http:// when the answer came over https:// (the
    /// server's word does not lower the download's security).
    func mirrors(beside origin: String, answered url: String) -> [SourceHeaders.Duplicate] {
        let secure = url.lowercased().hasPrefix("https://")
        return duplicates.filter { d in
            d.url != origin && d.url != url && (!secure || d.url.lowercased().hasPrefix("https://"))
                && DownloadURL.problem(d.url) == nil
        }
    }
}
