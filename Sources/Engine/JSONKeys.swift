import Foundation

/// Finds a key given twice in one JSON object of a request body. The decoder keeps one of the two without a
/// word, so `{"url": A, "url": B}` would be read as one of them while a program that checked the body first
/// (a filter, an audit log) may have read the other: such a body is refused instead. Pure; it looks at keys
/// only, and leaves every other check of the body to the decoder.
enum JSONKeys {
    /// The first key that appears twice in the same object, as the decoder reads it (escapes resolved); nil
    /// when there is none or the text is not JSON the scanner can follow (the decoder then says what is wrong).
    static func duplicate(in data: Data) -> String? {
        let bytes = [UInt8](data)
        // One entry per open object or array: the keys seen (objects only) and whether a key comes next.
        var stack: [(keys: Set<String>?, expectKey: Bool)] = []
        var i = 0
        while i < bytes.count {
            switch bytes[i] {
            case UInt8(ascii: "{"):
                stack.append((Set(), true))
            case UInt8(ascii: "["):
                stack.append((nil, false))
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                guard !stack.isEmpty else { return nil }
                stack.removeLast()
            case UInt8(ascii: ","):
                if let last = stack.indices.last, stack[last].keys != nil { stack[last].expectKey = true }
            case UInt8(ascii: "\""):
                guard let end = stringEnd(bytes, from: i) else { return nil }
                if let last = stack.indices.last, stack[last].keys != nil, stack[last].expectKey {
                    guard let key = decodeString(bytes[i...end]) else { return nil }
                    if stack[last].keys!.contains(key) { return key }
                    stack[last].keys!.insert(key)
                    stack[last].expectKey = false
                }
                i = end
            default:
                break
            }
            i += 1
        }
        return nil
    }

    /// The index of the quote that closes the string opened at `start`; nil when it is not closed.
    static func stringEnd(_ bytes: [UInt8], from start: Int) -> Int? {
        var i = start + 1
        while i < bytes.count {
            switch bytes[i] {
            case UInt8(ascii: "\\"): i += 2
            case UInt8(ascii: "\""): return i
            default: i += 1
            }
        }
        return nil
    }

    /// A quoted JSON string's value; the decoder resolves the escapes when there are any. Nil for bytes that are
    /// not UTF-8 (two different bad keys are not the same key: the decoder refuses them).
    static func decodeString(_ quoted: ArraySlice<UInt8>) -> String? {
        let inner = quoted.dropFirst().dropLast()
        if !inner.contains(UInt8(ascii: "\\")) { return String(validating: inner, as: UTF8.self) }
        return try? JSONDecoder().decode(String.self, from: Data(quoted))
    }
}
