/// Text someone else wrote (a server's header, another user's path or tag, a daemon's message), made safe
/// to show in a terminal: every control character (C0, DEL and the C1 range U+0080...U+009F, where U+009B is
/// a one-character CSI and U+009D an OSC) is written as a visible escape, so nothing a server or another
/// user sends can move the cursor, retitle the window or hide a line. Pure.
public enum ShownText {
    /// Whether a terminal may act on this scalar instead of showing it: C0, DEL, C1.
    public static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// Whether `text` holds any control character.
    public static func hasControl(_ text: some StringProtocol) -> Bool {
        text.unicodeScalars.contains(where: isControl)
    }

    /// `text` with each control character as `\n`, `\r`, `\t` or `\xHH` (`ESC [` shows as `\x1b[`, a C1
    /// CSI as `\x9b`); everything else unchanged.
    public static func escaped(_ text: some StringProtocol) -> String {
        guard hasControl(text) else { return String(text) }
        var out = ""
        for scalar in text.unicodeScalars {
            guard isControl(scalar) else {
                out.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default: out += "\\x" + hex(scalar.value)
            }
        }
        return out
    }

    /// A JSON document (as received, already parsed once) with DEL and C1 characters written as `\u00HH`
    /// escapes: the same JSON to a program, nothing a terminal acts on. Raw C0 characters other than JSON's
    /// whitespace cannot appear in valid JSON, and are escaped too.
    public static func json(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { isControl($0) && !["\n", "\r", "\t"].contains($0) }) else {
            return text
        }
        var out = ""
        for scalar in text.unicodeScalars {
            if isControl(scalar), !["\n", "\r", "\t"].contains(scalar) {
                out += "\\u00" + hex(scalar.value)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    private static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return digits.count == 1 ? "0" + digits : digits
    }
}
