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

    /// `file:line:column: message (hint: ...)`, the format compilers use, so editors can jump to it. A value
    /// quoted from the file may hold any character: control characters are shown escaped (`\x1b`), so a
    /// file cannot drive the terminal that prints its errors.
    public var description: String {
        var text = "\(Self.shown(file)):\(line):\(column): \(Self.shown(message))"
        if let hint { text += "\n    hint: \(Self.shown(hint))" }
        return text
    }

    /// `text` with C0, DEL and C1 control characters as `\xHH`.
    static func shown(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            if isControl(scalar) {
                let hex = String(scalar.value, radix: 16)
                out += "\\x" + (hex.count < 2 ? "0" + hex : hex)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }
}
