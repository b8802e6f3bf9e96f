import NIOHTTP1

/// What the responses on the way to an answer announced about the file (RFC 6249): mirrors in
/// `Link: rel=duplicate` and digests in `Digest` / `Repr-Digest`. A mirror system's redirector sends them
/// on its 302, so every response on the way counts, not only the last. Two responses that give a digest of
/// one kind differently give none of it.
struct Announced: Sendable, Equatable {
    private(set) var duplicates: [SourceHeaders.Duplicate] = []
    /// The digests, but none of a kind that two responses on the way gave differently.
    var digests: [Metalink.HashKind: [UInt8]] { given.filter { !conflicting.contains($0.key) } }
    private var given: [Metalink.HashKind: [UInt8]] = [:]
    private var conflicting: Set<Metalink.HashKind> = []

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
            for (kind, value) in SourceHeaders.digests(digestValues: digest, reprDigestValues: repr) {
                if let earlier = given[kind], earlier != value { conflicting.insert(kind) }
                given[kind] = value
            }
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

extension Announced {
    /// The announced sha-256 in hex when it is not `expectedSHA256` (`--sha256`); nil when it agrees, or either
    /// is missing.
    func contradicts(expectedSHA256: String?) -> String? {
        guard let expected = expectedSHA256?.lowercased(), let said = digests[.sha256] else { return nil }
        let hex = PieceRecord.hex(said)
        return hex == expected ? nil : hex
    }
}
