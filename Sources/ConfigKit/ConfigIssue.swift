/// One problem found in a configuration file (policy or scenario), located at `file:line:column`,
/// with a hint that says what to write instead.
public struct ConfigIssue: Error, Sendable, Hashable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var column: Int
    public var message: String
    public var hint: String?

    public init(file: String, line: Int, column: Int, message: String, hint: String? = nil) {
        self.file = file
        self.line = line
        self.column = column
        self.message = message
        self.hint = hint
    }

    /// `file:line:column: message (hint: ...)`, the format compilers use, so editors can jump to it.
    public var description: String {
        var text = "\(file):\(line):\(column): \(message)"
        if let hint { text += "\n    hint: \(hint)" }
        return text
    }
}
