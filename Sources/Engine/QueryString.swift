import MeterwiseClient

/// The query of a control API request (`?size=700MiB&tags=apt`) as names and values, percent-decoded.
///
/// Pure and total: whatever bytes a client sends, `parse` returns the parameters or an error that says
/// what to fix; it never traps. A name appears at most once, every name is non-empty, and the whole
/// query is bounded, so nothing after it has to ask again.
struct QueryString: Sendable, Equatable {
    /// The parameters in the order given.
    private(set) var parameters: [(name: String, value: String)]

    /// Longer queries are refused: no question the API takes needs more (64 tags of 256 bytes fit).
    static let maxBytes = 20_000

    init(parameters: [(name: String, value: String)]) {
        self.parameters = parameters
    }

    static func == (a: QueryString, b: QueryString) -> Bool {
        a.parameters.elementsEqual(b.parameters) { $0.name == $1.name && $0.value == $1.value }
    }

    /// The query of a request target (`/v1/decision?size=1`); empty when it has none.
    static func of(target: String) throws(EngineError) -> QueryString {
        guard let mark = target.firstIndex(of: "?") else { return QueryString(parameters: []) }
        return try parse(target[target.index(after: mark)...])
    }

    /// Parses `name=value&name=value`. Empty pieces (`a=1&&b=2`, a trailing `&`) are skipped; a piece
    /// without `=` is a name with an empty value.
    static func parse(_ query: Substring) throws(EngineError) -> QueryString {
        guard query.utf8.count <= maxBytes else {
            throw EngineError(
                .invalidRequest, "the query is over \(maxBytes) bytes: ask with fewer or shorter parameters")
        }
        var parameters: [(name: String, value: String)] = []
        for piece in query.split(separator: "&", omittingEmptySubsequences: true) {
            let rawName: Substring
            let rawValue: Substring
            if let equals = piece.firstIndex(of: "=") {
                rawName = piece[..<equals]
                rawValue = piece[piece.index(after: equals)...]
            } else {
                rawName = piece
                rawValue = ""
            }
            guard let name = decode(rawName), !name.isEmpty else {
                throw EngineError(
                    .invalidRequest,
                    rawName.isEmpty
                        ? "a query parameter has no name (`=\(visible(rawValue))`): write name=value"
                        : "the parameter name `\(visible(rawName))` is not valid percent-encoding")
            }
            guard let value = decode(rawValue) else {
                throw EngineError(.invalidRequest, "the value of `\(visible(name))` is not valid percent-encoding")
            }
            guard !parameters.contains(where: { $0.name == name }) else {
                throw EngineError(.invalidRequest, "`\(visible(name))` is given twice: give each parameter once")
            }
            parameters.append((name, value))
        }
        return QueryString(parameters: parameters)
    }

    /// Percent-decodes; nil for a malformed escape or bytes that are not UTF-8.
    static func decode(_ text: Substring) -> String? {
        guard text.contains("%") else { return String(text) }
        return String(text).removingPercentEncoding
    }

    /// Text a client sent, shortened and with control characters escaped, for an error message.
    static func visible(_ text: some StringProtocol) -> String {
        let scalars = text.unicodeScalars
        let shown = ShownText.escaped(String(String.UnicodeScalarView(scalars.prefix(64))))
        return scalars.count > 64 ? shown + "…" : shown
    }
}
