/// Where a delta download finds its control file and its seeds (docs/delta.md).
public struct DeltaSource: Sendable, Equatable, Codable {
    /// The control file: an http(s) URL, or a local path; nil is the download's URL with `.zsync` appended.
    public var control: String?
    /// Older versions to take blocks from, besides the file at the destination (read with the identity's
    /// rights).
    public var seeds: [String]

    /// A source with the default control URL and no seeds beyond the destination.
    public init(control: String? = nil, seeds: [String] = []) {
        self.control = control
        self.seeds = seeds
    }

    /// The control file's URL or path for a download of `url`.
    public func controlLocation(for url: String) -> String {
        if let control, !control.isEmpty { return control }
        let end = url.firstIndex { $0 == "?" || $0 == "#" } ?? url.endIndex
        return String(url[..<end]) + ".zsync" + String(url[end...])
    }

    /// Whether the control is fetched over HTTP (otherwise it is a local file).
    static func isRemote(_ location: String) -> Bool {
        let scheme = RedactedURL.scheme(of: location)
        return scheme == "http" || scheme == "https"
    }
}
