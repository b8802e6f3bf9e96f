/// One request the range server answered, for tests that count what was sent.
public struct ServedRequest: Sendable, Equatable {
    /// GET or HEAD.
    public var method: String
    /// The Range header, if any.
    public var range: String?
    /// The If-Match header, if any.
    public var ifMatch: String?
    /// The status answered.
    public var status: Int
    /// Offset of the first body byte.
    public var start: Int64
    /// Body bytes written to the socket so far.
    public var bodyBytes: Int64
}
