/// Every error of the Links module: scenario files and link monitors. The message tells the user what to fix.
public struct LinksError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable, Hashable {
        case scenarioSyntax
        case scenarioInvalid
        case fileUnreadable
        case monitorFailed
    }

    public var code: Code
    public var message: String
    /// The file the error is in, when it is in a file.
    public var file: String?
    public var line: Int?
    public var column: Int?

    public init(_ code: Code, _ message: String, file: String? = nil, line: Int? = nil, column: Int? = nil) {
        self.code = code
        self.message = message
        self.file = file
        self.line = line
        self.column = column
    }

    public var description: String {
        var location = ""
        if let file {
            location = file
            if let line { location += ":\(line)" }
            if let column { location += ":\(column)" }
            location += ": "
        }
        return location + message
    }
}
